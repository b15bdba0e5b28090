// OpenAI's /v1/embeddings on an embedding model (Qwen3-Embedding): the
// request's inputs as the ids each embeds (texts encoded with the tokenizer's
// special tokens, as sentence-transformers does; token lists as given), and
// the answer made of the engine's final hidden states, each L2-normalized
// after keeping the first `dimensions` values.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.h"

namespace qinfer::server {

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;
  int64_t dimensions = 0;  // 0: all
  bool base64 = false;     // encoding_format "base64": little-endian float32, as OpenAI's clients ask by default
  PromptOnlyOptions run;   // the adapter the body's "model" names, its cache_salt and priority
};

// The prompts of a pooling request's "input" (embeddings, classify): a
// string, a list of strings, a list of token ids or a list of such lists;
// texts as HF's tokenizer(text) encodes them; cut to truncate_prompt_tokens.
// 400 (ApiError naming the field) for another shape, an id outside the
// vocabulary, text without a tokenizer, or more than `max_inputs` inputs.
std::vector<std::vector<int32_t>> pooling_inputs(const nlohmann::ordered_json& body, const ServedModel& model,
                                                 int64_t max_inputs);

// vLLM's answer to a pooling request (/classify, /score): {"id", "object":
// "list", "created", "model", "data", "usage"}, usage counting the inputs' ids.
nlohmann::ordered_json pooling_response(const std::string& id, const std::string& model_name,
                                        nlohmann::ordered_json data, const std::vector<std::vector<int32_t>>& inputs);

// 400 (ApiError naming the field) for what OpenAI's API refuses, an input
// list longer than `max_inputs`, or an unknown field; 404 for another model.
EmbeddingRequest parse_embedding_request(const nlohmann::ordered_json& body, const ServedModel& model,
                                         int64_t max_inputs);

// The answer: {"object": "list", "data": [{"object": "embedding", "index",
// "embedding"}], "model", "usage"}; `hidden` holds each input's state.
nlohmann::ordered_json embedding_response(const EmbeddingRequest& request,
                                          const std::vector<std::vector<float>>& hidden, const std::string& model_name);

}  // namespace qinfer::server
