#include "server/rerank_api.h"

#include <algorithm>
#include <numeric>

#include "runtime/rerank.h"
#include "server/api_error.h"

namespace qinfer::server {

namespace {

using nlohmann::ordered_json;

constexpr int64_t kMaxDocuments = 2048;

std::string string_field(const ordered_json& body, const char* field, bool required) {
  if (!body.contains(field) || body[field].is_null()) {
    if (required) bad(field, std::string("'") + field + "' is missing");
    return "";
  }
  if (!body[field].is_string()) bad(field, std::string("'") + field + "' must be a string");
  return body[field].get<std::string>();
}

}  // namespace

RerankRequest parse_rerank_request(const ordered_json& body, const ServedModel& model, int64_t max_inputs) {
  check_known_fields(
      body, {"model", "query", "documents", "top_n", "return_documents", "instruction", "cache_salt", "priority"});
  RerankRequest r;
  r.run = requested_prompt_only_options(body, model);
  if (!model.bundle.tokenizer) bad("query", "this model has no tokenizer.json: it cannot read a query");
  const std::string query = string_field(body, "query", true);
  // The card's instruction where none is given (null too); "" is an empty one, as `qinfer rerank --instruct ""`.
  const std::string instruction =
      given(body, "instruction") ? string_field(body, "instruction", false) : std::string(kDefaultRerankInstruction);
  if (body.contains("top_n") && !body["top_n"].is_null()) {
    const ordered_json& n = body["top_n"];
    if ((!n.is_number_integer() && !integral_float(n)) || n.get<double>() < 0 || n.get<double>() > 9.0e18)
      bad("top_n", "'top_n' must be a non-negative integer");
    r.top_n = n.get<int64_t>();
  }
  if (body.contains("return_documents") && !body["return_documents"].is_null()) {
    if (!body["return_documents"].is_boolean()) bad("return_documents", "'return_documents' must be true or false");
    r.return_documents = body["return_documents"].get<bool>();
  }
  if (!body.contains("documents")) bad("documents", "'documents' is missing");
  const ordered_json& documents = body["documents"];
  if (!documents.is_array() || documents.empty())
    bad("documents", "'documents' must be a non-empty list of strings (or of {\"text\": string})");
  const int64_t limit = std::min(kMaxDocuments, max_inputs);
  if (static_cast<int64_t>(documents.size()) > limit)
    bad("documents", "at most " + std::to_string(limit) +
                         " documents per request (the server holds that many at once), got " +
                         std::to_string(documents.size()));
  try {
    r.prompt = std::make_shared<const RerankPrompt>(*model.bundle.tokenizer, *model.bundle.model);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "model");
  }
  for (size_t k = 0; k < documents.size(); ++k) {
    const ordered_json& d = documents[k];
    const ordered_json* text = d.is_string() ? &d : d.is_object() && d.contains("text") ? &d["text"] : nullptr;
    if (!text || !text->is_string())
      bad("documents", "documents[" + std::to_string(k) + "] must be a string or {\"text\": string}");
    r.documents.push_back(text->get<std::string>());
    r.inputs.push_back(r.prompt->input_ids(instruction, query, r.documents.back()));
  }
  return r;
}

ordered_json rerank_response(const RerankRequest& request, const std::vector<std::vector<float>>& outputs,
                             const std::string& id, const std::string& model_name) {
  std::vector<float> scores;
  int64_t tokens = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    scores.push_back(request.prompt->score(outputs[i]));
    tokens += static_cast<int64_t>(request.inputs[i].size());
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (request.top_n > 0 && static_cast<size_t>(request.top_n) < order.size()) order.resize(request.top_n);
  ordered_json results = ordered_json::array();
  for (size_t i : order) {
    ordered_json result = {{"index", i}};
    if (request.return_documents) result["document"] = {{"text", request.documents[i]}};
    result["relevance_score"] = scores[i];
    results.push_back(std::move(result));
  }
  return {{"id", id},
          {"model", model_name},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}},
          {"results", std::move(results)}};
}

}  // namespace qinfer::server
