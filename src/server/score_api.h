// vLLM's score API (/score, /v1/score): text_1 against text_2, one score per
// pair (one text_1 against each text_2, or pairwise). On a reranker
// (Qwen3-Reranker as downloaded, or converted to a one-label classifier) a
// pair is one prompt, text_1's ids then text_2's, scored as /rerank scores
// (runtime/rerank.h): clients format the texts, the card's prefix in text_1
// and its suffix in text_2, as vLLM's Qwen3-Reranker example does (/rerank
// formats them itself). On an embedding model (no lm_head, no head): the
// cosine similarity of the two texts' embeddings, as vLLM scores with one.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/rerank.h"
#include "server/openai_request.h"

namespace qinfer::server {

struct ScoreRequest {
  // A reranker's: one prompt per pair. An embedding model's: the texts, text_1's first.
  std::vector<std::vector<int32_t>> inputs;
  std::shared_ptr<const RerankPrompt> prompt;    // a reranker's scoring; null on an embedding model
  std::vector<std::pair<size_t, size_t>> pairs;  // an embedding model's: the inputs each pair compares
  PromptOnlyOptions run;                         // the adapter the body's "model" names, its cache_salt and priority
};

// 400 (ApiError naming the field) for texts missing or not strings, lists of
// lengths other than 1:N or N:N, more inputs than `max_inputs`, an unknown
// field, a model that neither reranks nor embeds, or a reranker whose
// tokenizer adds tokens around a text; 404 for another model.
ScoreRequest parse_score_request(const nlohmann::ordered_json& body, const ServedModel& model, int64_t max_inputs);

// {"id", "object": "list", "created", "model", "data": [{"index", "object":
// "score", "score"}], "usage"}, pairs in request order; `outputs` holds each
// input's Engine::output().
nlohmann::ordered_json score_response(const ScoreRequest& request, const std::vector<std::vector<float>>& outputs,
                                      const std::string& id, const std::string& model_name);

}  // namespace qinfer::server
