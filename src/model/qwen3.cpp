// The Qwen3 forward pass (the weights are loaded and bound in qwen3_weights.cpp).
#include "model/qwen3.h"

#include <algorithm>

#include "ops/ops.h"
#include "util/error.h"

namespace qinfer {

std::span<const float> forward(const Qwen3Model& model, const Batch& batch, KvPool& kv, ForwardState& s,
                               ThreadPool& pool) {
  const Qwen3Config& c = model.config();
  const Qwen3Weights& w = model.weights();
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  const int64_t H = c.hidden_size, hd = c.head_dim, nh = c.num_attention_heads, nkv = c.num_key_value_heads,
                I = c.intermediate_size, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (n == 0) fail("forward: no tokens");
  for (int32_t t : batch.tokens)
    if (t < 0 || t >= V) fail("token id ", t, " is outside the vocabulary [0, ", V, ")");

  s.x.resize(n * H);
  s.h.resize(n * H);
  s.q.resize(n * nh * hd);
  s.k.resize(n * nkv * hd);
  s.v.resize(n * nkv * hd);
  s.attn.resize(n * nh * hd);
  // The dense MLP's buffers, where a layer has one (a mixture's sparse layers use their own).
  const bool dense_mlp =
      std::any_of(w.layers.begin(), w.layers.end(), [](const Qwen3Layer& L) { return L.sparse_mlp.experts.empty(); });
  s.gate.resize(dense_mlp ? n * I : 0);
  s.up.resize(dense_mlp ? n * I : 0);
  // Each row's position, and the rows whose logits are asked for.
  s.positions.resize(n);
  s.row_adapter.resize(n);
  s.logit_rows.clear();
  s.hidden_rows.clear();
  int64_t rows_seen = 0;
  for (const BatchSeq& q : batch.seqs) {
    if (static_cast<int64_t>(q.blocks.size()) * kv.block_size() < q.pos0 + q.n)
      fail("forward: a block table of ", q.blocks.size(), " blocks of ", kv.block_size(), " positions cannot hold ",
           q.pos0 + q.n, " positions");
    model.check_adapter(q.adapter);
    for (int64_t t = 0; t < q.n; ++t) {
      s.positions[rows_seen + t] = static_cast<int32_t>(q.pos0 + t);
      s.row_adapter[rows_seen + t] = q.adapter;
    }
    if (q.logits == BatchSeq::Logits::All)
      for (int64_t t = 0; t < q.n; ++t) s.logit_rows.push_back(rows_seen + t);
    else if (q.logits == BatchSeq::Logits::Last && q.n > 0)
      s.logit_rows.push_back(rows_seen + q.n - 1);
    else if (q.logits == BatchSeq::Logits::Hidden && q.n > 0)
      s.hidden_rows.push_back(rows_seen + q.n - 1);
    rows_seen += q.n;
  }
  if (rows_seen != n) fail("forward: the sequences have ", rows_seen, " rows, the batch ", n, " tokens");
  if (!s.logit_rows.empty() && !model.has_lm_head())
    fail(
        "this checkpoint has no lm_head.weight (a backbone saved alone, such as an embedding model): it gives "
        "embeddings, not logits");
  s.rope.resize(n * hd);
  rope_cos_sin(s.positions.data(), n, model.rope_inv_freq().data(), hd, s.rope.data(), model.rope_scale());

  // Embedding lookup.
  for (int64_t t = 0; t < n; ++t) widen_row(w.embed_tokens, batch.tokens[t], &s.x[t * H]);

  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const Qwen3Layer& L = w.layers[l];

    // Attention block: norm -> q/k/v -> QK-norm -> RoPE -> (k, v into each
    // sequence's KV blocks) -> causal GQA over them -> o_proj -> residual.
    rmsnorm(s.x.data(), L.input_norm.data(), n, H, eps, s.h.data(), pool);
    matmul(s.h.data(), n, {{L.q_proj, s.q.data()}, {L.k_proj, s.k.data()}, {L.v_proj, s.v.data()}}, pool);
    add_lora(s.h.data(), n, s.row_adapter,
             {{L.lora.q_proj, s.q.data()}, {L.lora.k_proj, s.k.data()}, {L.lora.v_proj, s.v.data()}}, s.lora,
             pool);  // LoRA adapters' updates (model/lora.h); none without adapters
    rmsnorm(s.q.data(), L.q_norm.data(), n * nh, hd, eps, s.q.data(), pool);
    rmsnorm(s.k.data(), L.k_norm.data(), n * nkv, hd, eps, s.k.data(), pool);
    rope(s.q.data(), n, nh, hd, s.rope.data(), pool);
    rope(s.k.data(), n, nkv, hd, s.rope.data(), pool);
    s.attention.clear();
    int64_t row0 = 0;
    for (const BatchSeq& q : batch.seqs) {
      kv.store(l, q.blocks.data(), q.pos0, q.n, &s.k[row0 * nkv * hd], &s.v[row0 * nkv * hd]);
      s.attention.push_back(
          {&s.q[row0 * nh * hd], &s.attn[row0 * nh * hd], q.n, q.pos0, kv.blocks(l, q.blocks.data())});
      row0 += q.n;
    }
    attention(s.attention, {nh, nkv, hd}, pool);
    matmul(s.attn.data(), n, L.o_proj, s.h.data(), pool);
    add_lora(s.attn.data(), n, s.row_adapter, {{L.lora.o_proj, s.h.data()}}, s.lora, pool);
    add_in_place(s.x.data(), s.h.data(), n * H, pool);

    // MLP block: norm -> down(silu(gate) * up) -> residual; in a sparse
    // layer, the same through the few experts the router picks per token.
    rmsnorm(s.x.data(), L.post_attention_norm.data(), n, H, eps, s.h.data(), pool);
    if (!L.sparse_mlp.experts.empty()) {
      sparse_mlp(L.sparse_mlp, s.h.data(), n, s.h.data(), s.sparse_mlp, pool);
    } else {
      matmul(s.h.data(), n, {{L.gate_proj, s.gate.data()}, {L.up_proj, s.up.data()}}, pool);
      add_lora(s.h.data(), n, s.row_adapter, {{L.lora.gate_proj, s.gate.data()}, {L.lora.up_proj, s.up.data()}}, s.lora,
               pool);
      silu_mul(s.gate.data(), s.up.data(), n * I, s.gate.data(), pool);
      matmul(s.gate.data(), n, L.down_proj, s.h.data(), pool);
      add_lora(s.gate.data(), n, s.row_adapter, {{L.lora.down_proj, s.h.data()}}, s.lora, pool);
    }
    add_in_place(s.x.data(), s.h.data(), n * H, pool);
  }

  // Final norm alone for the rows whose hidden states are asked for.
  s.hidden.resize(s.hidden_rows.size() * H);
  for (size_t r = 0; r < s.hidden_rows.size(); ++r)
    rmsnorm(&s.x[s.hidden_rows[r] * H], w.final_norm.data(), 1, H, eps, &s.hidden[r * H], pool);

  // Final norm and lm_head, for the rows whose logits are asked for.
  const int64_t rows = static_cast<int64_t>(s.logit_rows.size());
  for (int64_t r = 0; r < rows; ++r)
    rmsnorm(&s.x[s.logit_rows[r] * H], w.final_norm.data(), 1, H, eps, &s.h[r * H], pool);
  s.logits.resize(rows * V);
  if (rows > 0) matmul(s.h.data(), rows, w.lm_head, s.logits.data(), pool);
  return s.logits;
}

std::span<const float> forward(const Qwen3Model& model, std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                               ForwardState& s, ThreadPool& pool, bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  cache.ensure(pos0 + n);
  Batch& b = s.single;
  b.tokens.assign(tokens.begin(), tokens.end());
  b.seqs = {{n, pos0, cache.table(), all_logits ? BatchSeq::Logits::All : BatchSeq::Logits::Last}};
  auto logits = forward(model, b, cache.pool(), s, pool);
  cache.note_written(pos0 + n);
  return logits;
}

std::vector<float> Qwen3Model::classify(std::span<const float> hidden) const {
  if (!has_classifier()) fail("this model has no classifier head (score.weight)");
  if (static_cast<int64_t>(hidden.size()) != config_.hidden_size)
    fail("a hidden state of ", hidden.size(), " values, not the model's ", config_.hidden_size);
  std::vector<float> logits(static_cast<size_t>(layout_.score_rows));
  ThreadPool caller_only(1);  // a few thousand products: any thread may ask, the engine's pool stays its own
  matmul(hidden.data(), 1, weights_.score, logits.data(), caller_only);
  return logits;
}

}  // namespace qinfer
