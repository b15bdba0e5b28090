// The rerank API vLLM and llama-server serve (Jina's and Cohere's shape) on
// a reranker (Qwen3-Reranker): a query and documents in, each document's
// relevance score out, most relevant first. Each document is the model
// card's judging prompt (runtime/rerank.h); `instruction` (qinfer's, as the
// card's <Instruct>) defaults to the card's.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/rerank.h"
#include "server/openai_request.h"

namespace qinfer::server {

struct RerankRequest {
  std::vector<std::string> documents;
  std::vector<std::vector<int32_t>> inputs;    // each document's prompt
  std::shared_ptr<const RerankPrompt> prompt;  // how they are scored
  int64_t top_n = 0;                           // 0: all
  bool return_documents = true;
  PromptOnlyOptions run;  // the adapter the body's "model" names, its cache_salt and priority
};

// 400 (ApiError naming the field) for a missing or malformed query or
// documents, more documents than `max_inputs`, a bad top_n, an unknown field,
// or a model without tokenizer; 404 for another model.
RerankRequest parse_rerank_request(const nlohmann::ordered_json& body, const ServedModel& model, int64_t max_inputs);

// {"id", "model", "usage", "results": [{"index", "document": {"text"},
// "relevance_score"}]}, by score (highest first; ties in input order), the
// first top_n; `outputs` holds each document's Engine::output().
nlohmann::ordered_json rerank_response(const RerankRequest& request, const std::vector<std::vector<float>>& outputs,
                                       const std::string& id, const std::string& model_name);

}  // namespace qinfer::server
