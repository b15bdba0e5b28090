#include "server/embeddings_api.h"

#include <cstring>
#include <ctime>

#include "runtime/embedding.h"
#include "server/api_error.h"

namespace qinfer::server {

namespace {

using nlohmann::ordered_json;

constexpr int64_t kMaxInputs = 2048;  // OpenAI's limit of inputs per request

std::string base64_of(const std::vector<float>& v) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as numpy's frombuffer reads it
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = static_cast<uint32_t>(bytes[i]) << 16;
    if (n > 1) group |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (n > 2) group |= bytes[i + 2];
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace

std::vector<std::vector<int32_t>> pooling_inputs(const ordered_json& body, const ServedModel& model,
                                                 int64_t max_inputs) {
  std::vector<std::vector<int32_t>> inputs;
  if (!body.contains("input")) bad("input", "'input' is missing");
  const ordered_json& input = body["input"];
  const char* shape = "'input' must be a string, a list of strings, a list of token ids, or a list of such lists";
  const int64_t vocab = model.bundle.model->config().vocab_size;
  auto ids_of = [&](const ordered_json& list, const std::string& path) {
    if (list.empty()) bad("input", path + " is an empty list of token ids");
    std::vector<int32_t> ids;
    for (size_t k = 0; k < list.size(); ++k) {
      if (!is_token_id(list[k], static_cast<uint64_t>(vocab)))
        bad("input", "token ids must be integers in [0, " + std::to_string(vocab) + "); " + path + "[" +
                         std::to_string(k) + "] is " + input_excerpt(list[k].dump()));
      ids.push_back(list[k].get<int32_t>());
    }
    return ids;
  };
  const Tokenizer* tokenizer = model.bundle.tokenizer ? &*model.bundle.tokenizer : nullptr;
  auto text_ids = [&](const ordered_json& text) {
    if (!tokenizer) bad("input", "this model has no tokenizer.json: give token ids");
    return embedding_input_ids(*tokenizer, text.get<std::string>());
  };
  if (input.is_string()) {
    inputs.push_back(text_ids(input));
  } else if (input.is_array() && !input.empty() && input[0].is_number()) {
    inputs.push_back(ids_of(input, "input"));
  } else if (input.is_array() && !input.empty()) {
    const int64_t limit = std::min(kMaxInputs, max_inputs);
    if (static_cast<int64_t>(input.size()) > limit)
      bad("input", "at most " + std::to_string(limit) +
                       " inputs per request (the server holds that many at once), got " + std::to_string(input.size()));
    for (size_t k = 0; k < input.size(); ++k) {
      if (input[k].is_string())
        inputs.push_back(text_ids(input[k]));
      else if (input[k].is_array())
        inputs.push_back(ids_of(input[k], "input[" + std::to_string(k) + "]"));
      else
        bad("input", shape);
    }
  } else {
    bad("input", input.is_array() ? "'input' is an empty list" : shape);
  }
  truncate_prompts(body, inputs, model.context, model.context);
  return inputs;
}

ordered_json pooling_response(const std::string& id, const std::string& model_name, ordered_json data,
                              const std::vector<std::vector<int32_t>>& inputs) {
  int64_t tokens = 0;
  for (const std::vector<int32_t>& ids : inputs) tokens += static_cast<int64_t>(ids.size());
  return {{"id", id},
          {"object", "list"},
          {"created", static_cast<int64_t>(std::time(nullptr))},
          {"model", model_name},
          {"data", std::move(data)},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

EmbeddingRequest parse_embedding_request(const ordered_json& body, const ServedModel& model, int64_t max_inputs) {
  check_known_fields(body, {"model", "input", "encoding_format", "dimensions", "user", "truncate_prompt_tokens",
                            "cache_salt", "priority"});
  EmbeddingRequest r;
  r.run = requested_prompt_only_options(body, model);
  if (given(body, "encoding_format")) {
    const ordered_json& f = body["encoding_format"];
    if (f != "float" && f != "base64") bad("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    r.base64 = f == "base64";
  }
  const int64_t hidden = model.bundle.model->config().hidden_size;
  if (given(body, "dimensions")) {
    const ordered_json& d = body["dimensions"];
    if ((!d.is_number_integer() && !integral_float(d)) || d.get<double>() < 1 ||
        d.get<double>() > static_cast<double>(hidden))
      bad("dimensions", "'dimensions' must be an integer between 1 and the model's " + std::to_string(hidden));
    r.dimensions = d.get<int64_t>();
  }
  check_user_field(body);
  r.inputs = pooling_inputs(body, model, max_inputs);
  return r;
}

ordered_json embedding_response(const EmbeddingRequest& request, const std::vector<std::vector<float>>& hidden,
                                const std::string& model_name) {
  ordered_json data = ordered_json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < hidden.size(); ++i) {
    const std::vector<float> v = embedding_vector(hidden[i], request.dimensions, true);
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", request.base64 ? ordered_json(base64_of(v)) : ordered_json(v)}});
    tokens += static_cast<int64_t>(request.inputs[i].size());
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model_name},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace qinfer::server
