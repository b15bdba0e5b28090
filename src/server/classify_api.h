// vLLM's /classify on a sequence classifier (Qwen3ForSequenceClassification,
// its score.weight head): each input's label probabilities from the head's
// logits of its final hidden state (softmax; a single label's sigmoid, as
// transformers' text-classification pipeline applies them), and the most
// probable label by its config.json id2label name (LABEL_i without one).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.h"

namespace qinfer::server {

struct ClassifyRequest {
  std::vector<std::vector<int32_t>> inputs;
  PromptOnlyOptions run;  // the adapter the body's "model" names, its cache_salt and priority
};

// 400 (ApiError naming the field) for a model without a classifier head, an
// unknown field, or a malformed input (server::pooling_inputs); 404 for
// another model.
ClassifyRequest parse_classify_request(const nlohmann::ordered_json& body, const ServedModel& model,
                                       int64_t max_inputs);

// {"id", "object": "list", "created", "model", "data": [{"index", "label",
// "probs", "num_classes"}], "usage"}; `hidden` holds each input's final state.
nlohmann::ordered_json classify_response(const ClassifyRequest& request, const std::vector<std::vector<float>>& hidden,
                                         const Qwen3Model& model, const std::string& id, const std::string& model_name);

}  // namespace qinfer::server
