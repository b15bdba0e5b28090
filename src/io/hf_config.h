// config.json and generation_config.json with transformers' semantics: a key
// that is absent takes Qwen3Config's default.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qinfer {

struct Qwen3Config {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;
  int64_t head_dim = 128;
  int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  // rope_scaling {"rope_type": "yarn", ...}, Qwen3's documented way past its
  // 32,768 trained positions: frequencies blended toward 1 / factor
  // (ops/yarn_inv_freq) and cos/sin times attention_factor. The context
  // (max_position_embeddings) becomes factor x original_max_position_embeddings
  // when that is more, as vLLM derives it.
  struct Yarn {
    double factor = 1;
    int64_t original_max_position_embeddings = 0;
    double beta_fast = 32, beta_slow = 1;
    bool truncate = true;
    double attention_factor = 1;
  };
  std::optional<Yarn> yarn;
  std::vector<int32_t> eos_token_ids;  // config.json's eos_token_id (a number or a list)
  // Qwen3ForSequenceClassification (a classifier head, score.weight, such as a
  // converted Qwen3-Reranker), not Qwen3ForCausalLM.
  bool sequence_classifier = false;
  // A classifier's label names by index (config.json's id2label); empty when
  // not given (transformers then names them LABEL_0, LABEL_1, ...).
  std::vector<std::string> id2label;

  // Qwen3MoeForCausalLM: the MLP of a sparse layer is num_experts SwiGLU
  // experts of width moe_intermediate_size, of which each token goes through
  // the num_experts_per_tok its router (mlp.gate) finds most probable, their
  // outputs summed weighted by those probabilities (renormalized to sum 1
  // with norm_topk_prob). Dense layers keep the intermediate_size MLP.
  int64_t num_experts = 0;  // 0: a dense model
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  // transformers' rule: not in mlp_only_layers, and every decoder_sparse_step-th layer.
  bool is_sparse_layer(int64_t layer) const;
};

// Parses config.json; refuses architectures other than Qwen3ForCausalLM,
// Qwen3MoeForCausalLM and Qwen3ForSequenceClassification, and features qinfer does
// not implement (attention bias, rope scaling other than YaRN, sliding window, non-SiLU).
Qwen3Config load_qwen3_config(const std::string& config_json_path);
Qwen3Config parse_qwen3_config(const std::string& json_text, const std::string& origin);

struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;
  std::optional<bool> do_sample;
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int> top_k;
};

// Error naming the file and field unless every id is in [0, vocab_size): an
// eos id outside the vocabulary is never generated, so nothing would stop there.
void require_in_vocabulary(const std::vector<int32_t>& ids, int64_t vocab_size, const char* key,
                           const std::string& origin);

// generation_config.json when present (an empty config otherwise). Its ids
// are checked against config.json's vocab_size by the caller, who has it.
GenerationConfig load_generation_config(const std::string& path);
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& origin);

}  // namespace qinfer
