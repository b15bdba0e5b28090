#include "io/lora_config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "util/error.h"
#include "util/json_error.h"
#include "util/mapped_file.h"

namespace qinfer {

using nlohmann::ordered_json;

namespace {

// PEFT's get_pattern_key: the first key k for which the module name matches
// the regular expression (.*\.)?(k)$ from its start.
template <class Value>
const Value* pattern_value(const std::vector<std::pair<std::string, Value>>& pattern, const std::string& module) {
  for (const auto& [key, value] : pattern)
    if (std::regex_match(module, std::regex("(.*\\.)?(" + key + ")"))) return &value;
  return nullptr;
}

bool is_set(const ordered_json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_array() || it->is_object() || it->is_string()) return !it->empty();
  return true;
}

}  // namespace

int64_t LoraConfig::rank_of(const std::string& module) const {
  const int64_t* v = pattern_value(rank_pattern, module);
  return v ? *v : r;
}

double LoraConfig::scaling_of(const std::string& module) const {
  const double* alpha = pattern_value(alpha_pattern, module);
  const double rank = static_cast<double>(rank_of(module));
  return (alpha ? *alpha : lora_alpha) / (use_rslora ? std::sqrt(rank) : rank);
}

LoraConfig read_lora_config(const std::string& path) {
  ordered_json j;
  try {
    j = ordered_json::parse(read_text_file(path));
  } catch (const ordered_json::exception& e) {
    fail(path, " is not valid JSON (", json_error_text(e), ")");
  }
  if (!j.is_object()) fail(path, ": expected a JSON object");
  const std::string type = j.value("peft_type", std::string("LORA"));
  if (type != "LORA") fail(path, ": peft_type is '", type, "'; qinfer runs LoRA adapters only");
  // Each of these adds to or changes what PEFT computes beyond the low-rank update.
  for (const char* key : {"use_dora", "modules_to_save", "layer_replication", "lora_bias", "use_qalora"})
    if (is_set(j, key))
      fail(path, ": '", key, "' is set; qinfer runs plain LoRA (no DoRA, no trained biases or ",
           "replaced modules, no layer replication)");
  // A hunt finding: an activated LoRA (PEFT 0.17) applies only to the tokens after its invocation sequence, and
  // ran on every token.
  if (is_set(j, "alora_invocation_tokens"))
    fail(path,
         ": 'alora_invocation_tokens' is set: an activated LoRA applies only after its invocation tokens, "
         "which qinfer does not track; it runs plain LoRA");
  // "all" and "lora_only" train the biases of the adapted layers: Qwen3's
  // have none, so PEFT saves none and the adapter is a plain one (a bias
  // tensor in the file is refused with the other tensors qinfer does not apply).
  if (j.contains("bias") && j["bias"] != "none" && j["bias"] != "all" && j["bias"] != "lora_only")
    fail(path, ": 'bias' is ", j["bias"].dump(), "; PEFT's are \"none\", \"all\" and \"lora_only\"");

  LoraConfig c;
  auto number = [&](const ordered_json& v, const std::string& what) {
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(path, ": ", what, " must be a number");
    return v.get<double>();
  };
  auto rank = [&](const ordered_json& v, const std::string& what) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65536)
      fail(path, ": ", what, " must be an integer rank from 1 to 65536");
    return v.get<int64_t>();
  };
  if (j.contains("r")) c.r = rank(j["r"], "'r'");
  if (j.contains("lora_alpha")) c.lora_alpha = number(j["lora_alpha"], "'lora_alpha'");
  if (j.contains("use_rslora") && !j["use_rslora"].is_null()) {
    if (!j["use_rslora"].is_boolean()) fail(path, ": 'use_rslora' must be true or false");
    c.use_rslora = j["use_rslora"].get<bool>();
  }
  auto patterns = [&](const char* key, auto& out, auto value) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_object()) fail(path, ": '", key, "' must be an object of module name patterns");
    for (const auto& [k, v] : j[key].items()) {
      try {
        std::regex check(k);
      } catch (const std::regex_error&) {
        fail(path, ": '", key, "' key '", k, "' is not a regular expression");
      }
      out.emplace_back(k, value(v, std::string("'") + key + "' of '" + k + "'"));
    }
  };
  patterns("rank_pattern", c.rank_pattern, rank);
  patterns("alpha_pattern", c.alpha_pattern, number);
  return c;
}

}  // namespace qinfer
