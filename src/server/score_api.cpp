#include "server/score_api.h"

#include "runtime/embedding.h"
#include "server/api_error.h"
#include "server/embeddings_api.h"

namespace qinfer::server {

using nlohmann::ordered_json;

namespace {

// text_1 or text_2: a string, or a non-empty list of strings.
std::vector<std::string> texts(const ordered_json& body, const char* field) {
  if (!given(body, field)) bad(field, std::string("'") + field + "' is missing");
  const ordered_json& v = body[field];
  const std::string shape = std::string("'") + field + "' must be a string or a non-empty list of strings";
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array() || v.empty()) bad(field, shape);
  std::vector<std::string> out;
  for (const ordered_json& t : v) {
    if (!t.is_string()) bad(field, shape);
    out.push_back(t.get<std::string>());
  }
  return out;
}

}  // namespace

ScoreRequest parse_score_request(const ordered_json& body, const ServedModel& model, int64_t max_inputs) {
  check_known_fields(body, {"model", "text_1", "text_2", "truncate_prompt_tokens", "user", "cache_salt", "priority"});
  check_user_field(body);
  ScoreRequest r;
  r.run = requested_prompt_only_options(body, model);
  const std::vector<std::string> first = texts(body, "text_1"), second = texts(body, "text_2");
  if (first.size() > 1 && first.size() != second.size())
    bad("text_2", "text_1 and text_2 must pair 1:N or N:N; got " + std::to_string(first.size()) + " and " +
                      std::to_string(second.size()) + " texts");
  const Qwen3Model& m = *model.bundle.model;
  const bool reranks = !m.embeds_only() && (m.has_lm_head() || m.has_classifier());
  const size_t inputs = reranks ? second.size() : first.size() + second.size();
  if (static_cast<int64_t>(inputs) > max_inputs)
    bad("text_2", "at most " + std::to_string(max_inputs) + " inputs per request (the server holds that many at once)");
  const Tokenizer* tokenizer = model.bundle.tokenizer ? &*model.bundle.tokenizer : nullptr;
  if (!tokenizer) bad("model", "this model has no tokenizer.json: it cannot read texts");
  auto text_1_of = [&](size_t pair) { return first.size() == 1 ? 0 : pair; };
  if (reranks) {
    if (tokenizer->adds_special_tokens())
      bad("model", "this tokenizer's post-processor adds tokens around a text: how it joins a pair is not known");
    try {
      r.prompt = std::make_shared<const RerankPrompt>(*tokenizer, *model.bundle.model);
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "model");
    }
    for (size_t k = 0; k < second.size(); ++k) r.inputs.push_back(r.prompt->pair_ids(first[text_1_of(k)], second[k]));
  } else {
    for (const std::string& t : first) r.inputs.push_back(embedding_input_ids(*tokenizer, t));
    for (const std::string& t : second) r.inputs.push_back(embedding_input_ids(*tokenizer, t));
    for (size_t k = 0; k < second.size(); ++k) r.pairs.emplace_back(text_1_of(k), first.size() + k);
  }
  truncate_prompts(body, r.inputs, model.context, model.context);
  return r;
}

ordered_json score_response(const ScoreRequest& request, const std::vector<std::vector<float>>& outputs,
                            const std::string& id, const std::string& model_name) {
  std::vector<float> scores;
  if (request.prompt) {
    for (const std::vector<float>& out : outputs) scores.push_back(request.prompt->score(out));
  } else {  // torch's cosine_similarity of the two normalized embeddings, each text's normalized once
    std::vector<std::vector<float>> normalized;
    for (const std::vector<float>& out : outputs) normalized.push_back(embedding_vector(out, 0, true));
    for (const auto& [a, b] : request.pairs) {
      const std::vector<float>&x = normalized[a], &y = normalized[b];
      double dot = 0;
      for (size_t k = 0; k < x.size(); ++k) dot += static_cast<double>(x[k]) * y[k];
      scores.push_back(static_cast<float>(dot));
    }
  }
  ordered_json data = ordered_json::array();
  for (size_t i = 0; i < scores.size(); ++i) data.push_back({{"index", i}, {"object", "score"}, {"score", scores[i]}});
  return pooling_response(id, model_name, std::move(data), request.inputs);
}

}  // namespace qinfer::server
