#include "io/hf_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_error.h"
#include "util/mapped_file.h"

namespace qinfer {

using nlohmann::json;

namespace {

json parse_object(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
    fail(origin, " is not valid JSON (", json_error_text(e), ")");
  }
  if (!j.is_object()) fail(origin, ": expected a JSON object");
  return j;
}

// id2label {"0": "NEGATIVE", "1": "POSITIVE"}: a name for each index from 0 up, once.
void read_id2label(const json& j, Qwen3Config& c, const std::string& origin) {
  if (!j.contains("id2label") || j["id2label"].is_null()) return;
  const json& labels = j["id2label"];
  if (!labels.is_object() || labels.size() > 1024)
    fail(origin, ": id2label must be an object of at most 1024 labels, {\"0\": name, \"1\": name, ...}");
  c.id2label.assign(labels.size(), "");
  std::vector<bool> named(labels.size());
  for (const auto& [key, name] : labels.items()) {
    size_t index = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), index);
    if (key.empty() || error != std::errc() || end != key.data() + key.size() || index >= labels.size() || named[index])
      fail(origin, ": id2label's keys must be the indexes 0 to ", labels.size() - 1, " once each; got \"",
           key.substr(0, 40), "\"");
    if (!name.is_string()) fail(origin, ": id2label[\"", key, "\"] must be a string");
    named[index] = true;
    c.id2label[index] = name.get<std::string>();
  }
}

// Reads key into *out when present and not null; a wrong type is an error naming the key.
template <class T>
void read_key(const json& j, const char* key, T* out, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) throw json::type_error::create(302, "expected a boolean", nullptr);
    } else if constexpr (std::is_integral_v<T>) {
      if (!it->is_number_integer()) throw json::type_error::create(302, "expected an integer", nullptr);
      const bool fits = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                            : it->get<int64_t>() >= std::numeric_limits<T>::min() &&
                                  it->get<int64_t>() <= std::numeric_limits<T>::max();
      if (!fits) fail(origin, ": field '", key, "' = ", it->dump(), " is out of range");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!it->is_number()) throw json::type_error::create(302, "expected a number", nullptr);
    }
    *out = it->get<T>();
  } catch (const json::exception&) {
    fail(origin, ": field '", key, "' has the wrong type (", it->type_name(), ")");
  }
}

template <class T>
void read_opt(const json& j, const char* key, std::optional<T>* out, const std::string& origin) {
  T v{};
  if (j.contains(key) && !j[key].is_null()) {
    read_key(j, key, &v, origin);
    *out = v;
  }
}

std::vector<int32_t> read_ids(const json& j, const char* key, const std::string& origin) {
  std::vector<int32_t> ids;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ids;
  auto one = [&](const json& v) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      fail(origin, ": field '", key, "' must be a token id or a list of token ids");
    ids.push_back(v.get<int32_t>());
  };
  if (it->is_array()) {
    for (const json& v : *it) one(v);
  } else {
    one(*it);
  }
  return ids;
}

// A size of the model: positive, and at most 2^24 (far beyond any model's),
// so that a product of two (a matrix's elements, heads x head_dim) stays far
// inside int64: 2^59 + 4 heads of 32 made 128 and passed the shape checks.
constexpr int64_t kMaxModelSize = int64_t{1} << 24;
void require_positive(int64_t v, const char* key, const std::string& origin, int64_t max = kMaxModelSize) {
  if (v <= 0) fail(origin, ": field '", key, "' must be positive, got ", v);
  if (v > max) fail(origin, ": field '", key, "' = ", v, " is beyond any model's (at most ", max, ")");
}

// The sparse MLP's keys of a Qwen3MoeForCausalLM config, checked.
void read_moe_keys(const json& j, Qwen3Config& c, const std::string& origin) {
  // transformers 5 names it num_local_experts (num_experts its alias).
  read_key(j, j.contains("num_experts") ? "num_experts" : "num_local_experts", &c.num_experts, origin);
  read_key(j, "num_experts_per_tok", &c.num_experts_per_tok, origin);
  read_key(j, "moe_intermediate_size", &c.moe_intermediate_size, origin);
  read_key(j, "norm_topk_prob", &c.norm_topk_prob, origin);
  read_key(j, "decoder_sparse_step", &c.decoder_sparse_step, origin);
  if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) fail(origin, ": field 'mlp_only_layers' must be a list of layer indices");
    for (const json& v : *it) {
      if (!v.is_number_integer()) fail(origin, ": field 'mlp_only_layers' must be a list of layer indices");
      c.mlp_only_layers.push_back(v.get<int64_t>());
    }
  }
  // Each layer binds num_experts x 3 tensors: far beyond any published model is a corrupt config.
  if (c.num_experts < 0 || c.num_experts > 65536)
    fail(origin, ": field 'num_experts' = ", c.num_experts, " is out of range (0 to 65536)");
  require_positive(c.decoder_sparse_step, "decoder_sparse_step", origin);
  if (c.num_experts > 0) {
    if (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts)
      fail(origin, ": field 'num_experts_per_tok' = ", c.num_experts_per_tok, " must be between 1 and num_experts (",
           c.num_experts, ")");
    require_positive(c.moe_intermediate_size, "moe_intermediate_size", origin);
  }
}

// rope_scaling (or rope_parameters, where newer transformers saves rope_theta
// and the scaling together): none, "default" or "yarn" with transformers'
// defaults (since transformers#40320: `factor` as given, the original context
// only bounding the ramp; 4.51 let original_max_position_embeddings override
// factor, a bug upstream fixed, which vLLM and llama.cpp never had).
void read_rope_scaling(const json& j, Qwen3Config& c, const std::string& origin) {
  const char* key = "rope_scaling";
  if (!j.contains(key) || j[key].is_null()) key = "rope_parameters";
  if (!j.contains(key) || j[key].is_null()) return;
  const json& r = j[key];
  const std::string where = origin + ": " + key;
  if (!r.is_object()) fail(where, " must be an object, not ", r.type_name());
  read_key(r, "rope_theta", &c.rope_theta, where);
  std::string type = "default";
  read_key(r, "type", &type, where);  // the older name
  read_key(r, "rope_type", &type, where);
  if (type == "default") return;
  if (type != "yarn") fail(where, ": rope type '", type, "' is not supported (qinfer runs \"default\" and \"yarn\")");
  Qwen3Config::Yarn y;
  y.original_max_position_embeddings = c.max_position_embeddings;
  read_key(r, "original_max_position_embeddings", &y.original_max_position_embeddings, where);
  if (!r.contains("factor") || r["factor"].is_null()) {  // transformers: the ratio of the two contexts
    y.factor = static_cast<double>(c.max_position_embeddings) / static_cast<double>(y.original_max_position_embeddings);
  }
  read_key(r, "factor", &y.factor, where);
  read_key(r, "beta_fast", &y.beta_fast, where);
  read_key(r, "beta_slow", &y.beta_slow, where);
  read_key(r, "truncate", &y.truncate, where);
  double mscale = 0, mscale_all_dim = 0;
  read_key(r, "mscale", &mscale, where);
  read_key(r, "mscale_all_dim", &mscale_all_dim, where);
  if (y.original_max_position_embeddings <= 0)
    fail(where, ": original_max_position_embeddings must be positive, got ", y.original_max_position_embeddings);
  if (!(y.factor >= 1) || !std::isfinite(y.factor)) fail(where, ": factor must be at least 1, got ", y.factor);
  if (!(y.beta_fast > 0) || !(y.beta_slow > 0) || !std::isfinite(y.beta_fast) || !std::isfinite(y.beta_slow))
    fail(where, ": beta_fast and beta_slow must be positive");
  // The paper's attention factor, or DeepSeek's ratio of two, or as given.
  auto get_mscale = [&](double m) { return y.factor <= 1 ? 1.0 : 0.1 * m * std::log(y.factor) + 1.0; };
  y.attention_factor =
      mscale != 0 && mscale_all_dim != 0 ? get_mscale(mscale) / get_mscale(mscale_all_dim) : get_mscale(1.0);
  read_key(r, "attention_factor", &y.attention_factor, where);
  if (!(y.attention_factor > 0) || !std::isfinite(y.attention_factor))
    fail(where, ": attention_factor must be positive, got ", y.attention_factor);
  if (!(c.rope_theta > 1)) fail(where, ": yarn needs rope_theta above 1, got ", c.rope_theta);
  // Positions are int32 (rope_cos_sin).
  const double context = y.factor * static_cast<double>(y.original_max_position_embeddings);
  if (context > static_cast<double>(std::numeric_limits<int32_t>::max()))
    fail(where, ": factor x original_max_position_embeddings is ", context, " positions, more than 2^31 - 1");
  c.max_position_embeddings = std::max(c.max_position_embeddings, static_cast<int64_t>(context));
  c.yarn = y;
}

// Whether any layer attends through a sliding window, as transformers
// decides it: only with use_sliding_window, a sliding_window, and (dense
// Qwen3Config) a layer layer_types calls "sliding_attention" (without it:
// layers from max_window_layers on; Qwen3MoeConfig has neither, and every
// layer slides), and only where the window is shorter than the context (a
// longer one masks nothing).
bool slides(const json& j, const Qwen3Config& c, bool moe, const std::string& origin) {
  bool use_sliding_window = false;
  read_key(j, "use_sliding_window", &use_sliding_window, origin);
  if (!use_sliding_window || (j.contains("sliding_window") && j["sliding_window"].is_null())) return false;
  int64_t window = 4096, max_window_layers = 28;  // Qwen3Config's defaults
  read_key(j, "sliding_window", &window, origin);
  read_key(j, "max_window_layers", &max_window_layers, origin);
  if (window >= c.max_position_embeddings) return false;
  if (moe) return true;
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array())
    return std::any_of(it->begin(), it->end(), [](const json& t) { return t == "sliding_attention"; });
  return max_window_layers < c.num_hidden_layers;
}

// The architecture: architectures[0], or, without it, the one transformers'
// Auto classes take for the model_type. Qwen3Model is the backbone alone (a
// sentence-transformers save of Qwen3-Embedding), read as Qwen3ForCausalLM
// (embed uses no lm_head; generate says it has none).
std::string architecture(const json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    const std::string arch = j["architectures"][0].get<std::string>();
    return arch == "Qwen3Model" ? "Qwen3ForCausalLM" : arch;
  }
  if (j.contains("model_type") && j["model_type"] == "qwen3") return "Qwen3ForCausalLM";
  if (j.contains("model_type") && j["model_type"] == "qwen3_moe") return "Qwen3MoeForCausalLM";
  return "";
}

}  // namespace

bool Qwen3Config::is_sparse_layer(int64_t layer) const {
  return num_experts > 0 && (layer + 1) % decoder_sparse_step == 0 &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) == mlp_only_layers.end();
}

void require_in_vocabulary(const std::vector<int32_t>& ids, int64_t vocab_size, const char* key,
                           const std::string& origin) {
  for (const int32_t id : ids)
    if (id >= vocab_size)
      fail(origin, ": field '", key, "' holds token id ", id, ", outside the model's vocabulary [0, ", vocab_size, ")");
}

Qwen3Config parse_qwen3_config(const std::string& text, const std::string& origin) {
  const json j = parse_object(text, origin);
  const std::string arch = architecture(j);
  const bool moe = arch == "Qwen3MoeForCausalLM";
  if (arch != "Qwen3ForCausalLM" && arch != "Qwen3ForSequenceClassification" && !moe)
    fail(origin, ": architecture '", arch.empty() ? std::string("(none)") : arch,
         "' is not supported; qinfer runs Qwen3ForCausalLM (and its backbone, Qwen3Model), Qwen3MoeForCausalLM and "
         "Qwen3ForSequenceClassification checkpoints");

  Qwen3Config c;
  c.sequence_classifier = arch == "Qwen3ForSequenceClassification";
  if (moe) {  // Qwen3MoeConfig's defaults, where they differ from Qwen3Config's
    c.hidden_size = 2048;
    c.intermediate_size = 6144;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 32;
    c.num_experts = 128;
    c.num_experts_per_tok = 8;
    c.moe_intermediate_size = 768;
  }
  read_key(j, "vocab_size", &c.vocab_size, origin);
  read_key(j, "hidden_size", &c.hidden_size, origin);
  read_key(j, "intermediate_size", &c.intermediate_size, origin);
  read_key(j, "num_hidden_layers", &c.num_hidden_layers, origin);
  read_key(j, "num_attention_heads", &c.num_attention_heads, origin);
  c.num_key_value_heads = moe ? 4 : c.num_attention_heads;  // transformers: None -> num_attention_heads
  read_key(j, "num_key_value_heads", &c.num_key_value_heads, origin);
  // Qwen3MoeConfig has no head_dim default: its attention takes hidden_size / num_attention_heads.
  if (moe && c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  read_key(j, "head_dim", &c.head_dim, origin);
  read_key(j, "max_position_embeddings", &c.max_position_embeddings, origin);
  read_key(j, "rms_norm_eps", &c.rms_norm_eps, origin);
  read_key(j, "rope_theta", &c.rope_theta, origin);
  read_key(j, "tie_word_embeddings", &c.tie_word_embeddings, origin);
  c.eos_token_ids = read_ids(j, "eos_token_id", origin);
  if (moe) read_moe_keys(j, c, origin);

  require_positive(c.vocab_size, "vocab_size", origin);
  require_in_vocabulary(c.eos_token_ids, c.vocab_size, "eos_token_id", origin);
  require_positive(c.hidden_size, "hidden_size", origin);
  require_positive(c.intermediate_size, "intermediate_size", origin);
  require_positive(c.num_hidden_layers, "num_hidden_layers", origin);
  require_positive(c.num_attention_heads, "num_attention_heads", origin);
  require_positive(c.num_key_value_heads, "num_key_value_heads", origin);
  require_positive(c.head_dim, "head_dim", origin);
  require_positive(c.max_position_embeddings, "max_position_embeddings", origin,
                   std::numeric_limits<int64_t>::max());  // the KV pool bounds what a sequence may use
  if (c.head_dim % 2) fail(origin, ": head_dim must be even for rotary embeddings, got ", c.head_dim);
  if (c.num_attention_heads % c.num_key_value_heads)
    fail(origin, ": num_attention_heads (", c.num_attention_heads, ") is not a multiple of num_key_value_heads (",
         c.num_key_value_heads, ")");
  if (!(c.rms_norm_eps > 0)) fail(origin, ": rms_norm_eps must be positive");
  read_rope_scaling(j, c, origin);
  read_id2label(j, c, origin);
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) fail(origin, ": rope_theta must be positive and finite");
  // Rotary angles are f32 products position x frequency, the highest frequency max(1, rope_theta^(-(head_dim - 2) /
  // head_dim)): for a tiny theta they overflow, and every logit is NaN (which would be blamed on the weights).
  const double top_frequency =
      std::max(1.0, std::pow(c.rope_theta, -static_cast<double>(c.head_dim - 2) / static_cast<double>(c.head_dim)));
  if (!(top_frequency * static_cast<double>(c.max_position_embeddings) < std::numeric_limits<float>::max()))
    fail(origin, ": rope_theta ", c.rope_theta, " makes the rotary angles infinite (over max_position_embeddings ",
         c.max_position_embeddings, ")");

  bool attention_bias = false;
  std::string act = "silu";
  read_key(j, "attention_bias", &attention_bias, origin);
  read_key(j, "hidden_act", &act, origin);
  if (attention_bias) fail(origin, ": attention_bias=true is not supported (Qwen3 has no attention biases)");
  if (slides(j, c, moe, origin))
    fail(origin,
         ": use_sliding_window=true with layers that slide (max_window_layers or layer_types) is not supported");
  // "swish" is SiLU in transformers' ACT2FN.
  if (act != "silu" && act != "swish") fail(origin, ": hidden_act '", act, "' is not supported (only silu)");
  return c;
}

Qwen3Config load_qwen3_config(const std::string& path) {
  if (!file_exists(path)) fail(path, ": config.json not found: not a Hugging Face checkpoint directory?");
  return parse_qwen3_config(read_text_file(path), path);
}

GenerationConfig parse_generation_config(const std::string& text, const std::string& origin) {
  const json j = parse_object(text, origin);
  GenerationConfig g;
  g.eos_token_ids = read_ids(j, "eos_token_id", origin);
  read_opt(j, "do_sample", &g.do_sample, origin);
  read_opt(j, "temperature", &g.temperature, origin);
  read_opt(j, "top_p", &g.top_p, origin);
  read_opt(j, "min_p", &g.min_p, origin);
  read_opt(j, "repetition_penalty", &g.repetition_penalty, origin);
  read_opt(j, "top_k", &g.top_k, origin);
  // The ranges transformers' GenerationConfig accepts (top_k 0: off).
  // A float of 1e300 is infinite: out of range too (else every request is refused as if its own).
  auto check = [&](const char* key, const auto& value, bool ok) {
    if (value && (!ok || !std::isfinite(static_cast<double>(*value))))
      fail(origin, ": field '", key, "' = ", j[key].dump(), " is out of range");
  };
  check("temperature", g.temperature, g.temperature >= 0.0f);
  // top_p 0 keeps no token: transformers refuses it when it samples, and takes it where do_sample is off (unused).
  check("top_p", g.top_p, (g.top_p > 0.0f || (g.top_p == 0.0f && !g.do_sample.value_or(false))) && g.top_p <= 1.0f);
  check("min_p", g.min_p, g.min_p >= 0.0f && g.min_p <= 1.0f);
  check("repetition_penalty", g.repetition_penalty, g.repetition_penalty > 0.0f);
  check("top_k", g.top_k, g.top_k >= 0);
  return g;
}

GenerationConfig load_generation_config(const std::string& path) {
  if (!file_exists(path)) return {};
  return parse_generation_config(read_text_file(path), path);
}

}  // namespace qinfer
