// Qwen3ForCausalLM: config, weights read in place from the checkpoint, and one
// forward pass written top to bottom like the paper.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/safetensors.h"
#include "model/kv_cache.h"
#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace qinfer {

struct Qwen3Layer {
  std::vector<float> input_norm, post_attention_norm, q_norm, k_norm;  // small: widened to f32 at load
  WeightMatrix q_proj, k_proj, v_proj, o_proj;
  WeightMatrix gate_proj, up_proj, down_proj;
};

struct Qwen3Weights {
  WeightMatrix embed_tokens;  // [vocab, hidden]
  std::vector<Qwen3Layer> layers;
  std::vector<float> final_norm;
  WeightMatrix lm_head;  // the embedding matrix itself when tie_word_embeddings
};

class Qwen3Model {
 public:
  // Loads config.json and the safetensors weights of a checkpoint directory,
  // checking every tensor the config needs is there with the implied shape.
  static std::unique_ptr<Qwen3Model> load(const std::string& dir);

  const Qwen3Config& config() const { return config_; }
  const Qwen3Weights& weights() const { return weights_; }
  const std::vector<float>& rope_inv_freq() const { return rope_inv_freq_; }
  size_t weight_bytes() const { return weight_bytes_; }

  KvCache make_cache() const;  // sized for the model's context length, grown on use

 private:
  Qwen3Config config_;
  Checkpoint checkpoint_;                       // owns the mappings the weights point into
  std::vector<std::vector<uint8_t>> realigned_;  // copies of tensors whose data was misaligned in the file
  Qwen3Weights weights_;
  std::vector<float> rope_inv_freq_;
  size_t weight_bytes_ = 0;
};

// Per-step activations, reused between calls so decode does not allocate.
struct ForwardState {
  std::vector<float> x, h, q, attn, gate, up, logits;
  std::vector<int32_t> positions;
};

// Runs tokens at positions pos0 .. pos0+n-1 through the model, appending their
// keys/values to `cache` (which must already hold positions [0, pos0)).
// Error when a token is outside the vocabulary or the context length is exceeded.
// Returns the logits of the last position (vocab_size floats, in state.logits),
// or of every position when all_logits is set ([n, vocab_size]).
std::span<const float> forward(const Qwen3Model& model, std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                               ForwardState& state, ThreadPool& pool, bool all_logits = false);

}  // namespace qinfer
