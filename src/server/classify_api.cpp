#include "server/classify_api.h"

#include <algorithm>
#include <cmath>

#include "server/api_error.h"
#include "server/embeddings_api.h"

namespace qinfer::server {

using nlohmann::ordered_json;

ClassifyRequest parse_classify_request(const ordered_json& body, const ServedModel& model, int64_t max_inputs) {
  check_known_fields(body, {"model", "input", "user", "truncate_prompt_tokens", "cache_salt", "priority"});
  ClassifyRequest r;
  r.run = requested_prompt_only_options(body, model);
  if (!model.bundle.model->has_classifier())
    throw ApiError(400,
                   "this model has no classifier head (score.weight): /classify needs a "
                   "Qwen3ForSequenceClassification checkpoint",
                   "model");
  check_user_field(body);
  r.inputs = pooling_inputs(body, model, max_inputs);
  return r;
}

ordered_json classify_response(const ClassifyRequest& request, const std::vector<std::vector<float>>& hidden,
                               const Qwen3Model& model, const std::string& id, const std::string& model_name) {
  const std::vector<std::string>& names = model.config().id2label;
  ordered_json data = ordered_json::array();
  for (size_t i = 0; i < hidden.size(); ++i) {
    const std::vector<float> logits = model.classify(hidden[i]);
    std::vector<double> probs(logits.size());
    if (logits.size() == 1) {
      probs[0] = 1 / (1 + std::exp(-static_cast<double>(logits[0])));
    } else {
      const double top = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (size_t k = 0; k < logits.size(); ++k) sum += probs[k] = std::exp(logits[k] - top);
      for (double& p : probs) p /= sum;
    }
    const size_t best = static_cast<size_t>(std::max_element(probs.begin(), probs.end()) - probs.begin());
    data.push_back({{"index", i},
                    {"label", best < names.size() ? names[best] : "LABEL_" + std::to_string(best)},
                    {"probs", probs},
                    {"num_classes", probs.size()}});
  }
  return pooling_response(id, model_name, std::move(data), request.inputs);
}

}  // namespace qinfer::server
