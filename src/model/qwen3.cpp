#include "model/qwen3.h"

#include <algorithm>
#include <cstring>

#include "ops/ops.h"
#include "util/error.h"

namespace qinfer {

namespace {

// Binds tensor `name` of the checkpoint as a [rows, cols] weight matrix.
struct Binder {
  const Checkpoint& ck;
  std::vector<std::vector<uint8_t>>& realigned;
  size_t& bytes;

  const uint8_t* aligned_data(const TensorView& t) {
    if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) == 0) return t.data;
    realigned.emplace_back(t.data, t.data + t.nbytes);
    return realigned.back().data();
  }

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) {
    const TensorView& t = ck.require(name, {rows, cols});
    bytes += t.nbytes;
    if (t.dtype == DType::U8) fail("tensor ", name, ": U8 data without a quantization scale tensor");
    return WeightMatrix{weight_format_of(t.dtype), aligned_data(t), nullptr, rows, cols};
  }

  std::vector<float> vector(const std::string& name, int64_t n) {
    const TensorView& t = ck.require(name, {n});
    bytes += t.nbytes;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = load_as_f32(t.data, t.dtype, i);
    return v;
  }
};

}  // namespace

std::unique_ptr<Qwen3Model> Qwen3Model::load(const std::string& dir) {
  auto m = std::make_unique<Qwen3Model>();
  m->config_ = load_qwen3_config(dir + "/config.json");
  m->checkpoint_ = Checkpoint::open(dir);
  const Qwen3Config& c = m->config_;
  const int64_t H = c.hidden_size, hd = c.head_dim, q_dim = c.num_attention_heads * hd,
                kv_dim = c.num_key_value_heads * hd, I = c.intermediate_size;

  Binder b{m->checkpoint_, m->realigned_, m->weight_bytes_};
  Qwen3Weights& w = m->weights_;
  w.embed_tokens = b.matrix("model.embed_tokens.weight", c.vocab_size, H);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Qwen3Layer L;
    L.input_norm = b.vector(p + "input_layernorm.weight", H);
    L.q_proj = b.matrix(p + "self_attn.q_proj.weight", q_dim, H);
    L.k_proj = b.matrix(p + "self_attn.k_proj.weight", kv_dim, H);
    L.v_proj = b.matrix(p + "self_attn.v_proj.weight", kv_dim, H);
    L.o_proj = b.matrix(p + "self_attn.o_proj.weight", H, q_dim);
    L.q_norm = b.vector(p + "self_attn.q_norm.weight", hd);
    L.k_norm = b.vector(p + "self_attn.k_norm.weight", hd);
    L.post_attention_norm = b.vector(p + "post_attention_layernorm.weight", H);
    L.gate_proj = b.matrix(p + "mlp.gate_proj.weight", I, H);
    L.up_proj = b.matrix(p + "mlp.up_proj.weight", I, H);
    L.down_proj = b.matrix(p + "mlp.down_proj.weight", H, I);
    w.layers.push_back(std::move(L));
  }
  w.final_norm = b.vector("model.norm.weight", H);
  // Tied: the embedding matrix is the lm_head and any lm_head.weight in the file is ignored.
  w.lm_head = c.tie_word_embeddings ? w.embed_tokens : b.matrix("lm_head.weight", c.vocab_size, H);

  m->rope_inv_freq_.resize(static_cast<size_t>(hd / 2));
  qinfer::rope_inv_freq(c.rope_theta, hd, m->rope_inv_freq_.data());
  return m;
}

KvCache Qwen3Model::make_cache() const {
  return KvCache(config_.num_hidden_layers, config_.num_key_value_heads, config_.head_dim,
                 config_.max_position_embeddings);
}

std::span<const float> forward(const Qwen3Model& model, std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                               ForwardState& s, ThreadPool& pool, bool all_logits) {
  const Qwen3Config& c = model.config();
  const Qwen3Weights& w = model.weights();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t H = c.hidden_size, hd = c.head_dim, nh = c.num_attention_heads, nkv = c.num_key_value_heads,
                I = c.intermediate_size, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (n == 0) fail("forward: no tokens");
  for (int32_t t : tokens)
    if (t < 0 || t >= V) fail("token id ", t, " is outside the vocabulary [0, ", V, ")");

  cache.ensure(pos0 + n);
  s.x.resize(n * H);
  s.h.resize(n * H);
  s.q.resize(n * nh * hd);
  s.attn.resize(n * nh * hd);
  s.gate.resize(n * I);
  s.up.resize(n * I);
  s.positions.resize(n);
  for (int64_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + t);

  // Embedding lookup.
  for (int64_t t = 0; t < n; ++t) widen_row(w.embed_tokens, tokens[t], &s.x[t * H]);

  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const Qwen3Layer& L = w.layers[l];
    float* k = cache.k(l, pos0);  // this step's keys and values go straight into the cache
    float* v = cache.v(l, pos0);

    // Attention block: norm -> q/k/v -> QK-norm -> RoPE -> causal GQA -> o_proj -> residual.
    rmsnorm(s.x.data(), L.input_norm.data(), n, H, eps, s.h.data());
    matmul(s.h.data(), n, {{L.q_proj, s.q.data()}, {L.k_proj, k}, {L.v_proj, v}}, pool);
    rmsnorm(s.q.data(), L.q_norm.data(), n * nh, hd, eps, s.q.data());
    rmsnorm(k, L.k_norm.data(), n * nkv, hd, eps, k);
    rope(s.q.data(), n, nh, hd, s.positions.data(), model.rope_inv_freq().data());
    rope(k, n, nkv, hd, s.positions.data(), model.rope_inv_freq().data());
    attention(s.q.data(), n, pos0, cache.k(l, 0), cache.v(l, 0), {nh, nkv, hd}, s.attn.data(), pool);
    matmul(s.attn.data(), n, L.o_proj, s.h.data(), pool);
    for (int64_t i = 0; i < n * H; ++i) s.x[i] += s.h[i];

    // MLP block: norm -> down(silu(gate) * up) -> residual.
    rmsnorm(s.x.data(), L.post_attention_norm.data(), n, H, eps, s.h.data());
    matmul(s.h.data(), n, {{L.gate_proj, s.gate.data()}, {L.up_proj, s.up.data()}}, pool);
    silu_mul(s.gate.data(), s.up.data(), n * I, s.gate.data());
    matmul(s.gate.data(), n, L.down_proj, s.h.data(), pool);
    for (int64_t i = 0; i < n * H; ++i) s.x[i] += s.h[i];
  }

  // Final norm and lm_head, for the last position only unless asked for all.
  const int64_t first = all_logits ? 0 : n - 1, rows = n - first;
  rmsnorm(&s.x[first * H], w.final_norm.data(), rows, H, eps, s.h.data());
  s.logits.resize(rows * V);
  matmul(s.h.data(), rows, w.lm_head, s.logits.data(), pool);
  return s.logits;
}

}  // namespace qinfer
