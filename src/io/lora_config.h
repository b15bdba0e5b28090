// A PEFT LoRA adapter's adapter_config.json: what its low-rank updates are
// scaled by. Every setting that would change the arithmetic beyond
// y += scaling · B·A·x (DoRA, trained biases, replaced modules, layer
// replication, other PEFT types) is refused with its name, so an adapter
// either runs as PEFT runs it or not at all.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qinfer {

struct LoraConfig {
  int64_t r = 8;
  double lora_alpha = 8;
  bool use_rslora = false;  // scaling alpha / sqrt(r) instead of alpha / r
  // Per-module overrides, keys as written (a module name or its tail, e.g.
  // "q_proj" or "layers.3.mlp.down_proj"), in file order: the first that
  // matches wins, as in PEFT's get_pattern_key.
  std::vector<std::pair<std::string, int64_t>> rank_pattern;
  std::vector<std::pair<std::string, double>> alpha_pattern;

  // The rank PEFT gives `module` (e.g. "model.layers.0.self_attn.q_proj").
  int64_t rank_of(const std::string& module) const;
  // PEFT's scaling of that module's update.
  double scaling_of(const std::string& module) const;
};

// `path`: the adapter_config.json file; Error naming it and the field.
LoraConfig read_lora_config(const std::string& path);

}  // namespace qinfer
