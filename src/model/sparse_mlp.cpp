#include "model/sparse_mlp.h"

#include <algorithm>
#include <cstring>

#include "ops/ops.h"

namespace qinfer {

void sparse_mlp(const SparseMlp& mlp, const float* x, int64_t n, float* out, SparseMlpState& s, ThreadPool& pool) {
  const int64_t E = static_cast<int64_t>(mlp.experts.size()), K = mlp.top_k, H = mlp.router.cols,
                W = mlp.experts.front().gate_proj.rows;
  s.router_logits.resize(n * E);
  matmul(x, n, mlp.router, s.router_logits.data(), pool);
  s.experts.resize(n * K);
  s.weights.resize(n * K);
  route_top_k(s.router_logits.data(), n, E, K, mlp.normalize, s.experts.data(), s.weights.data());

  // The (row, weight) pairs of each expert, rows ascending (a counting sort).
  s.first_slot.assign(E + 1, 0);
  for (int64_t i = 0; i < n * K; ++i) ++s.first_slot[s.experts[i] + 1];
  for (int64_t e = 0; e < E; ++e) s.first_slot[e + 1] += s.first_slot[e];
  s.rows.resize(n * K);
  s.row_weights.resize(n * K);
  std::vector<int64_t>& next = s.first_slot;  // advanced while filling, then shifted back
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < K; ++j) {
      const int64_t slot = next[s.experts[r * K + j]]++;
      s.rows[slot] = r;
      s.row_weights[slot] = s.weights[r * K + j];
    }
  for (int64_t e = E; e > 0; --e) next[e] = next[e - 1];
  next[0] = 0;

  // Every expert's rows side by side (slot order), then all experts' gate and
  // up in one parallel section and all their downs in another: per token a
  // decode step runs top_k small experts, and a section per matrix would
  // cost more in starts and ends than the matrices take.
  s.x.resize(n * K * H);
  s.gate.resize(n * K * W);
  s.up.resize(n * K * W);
  s.y.resize(n * K * H);
  for (int64_t slot = 0; slot < n * K; ++slot) std::memcpy(&s.x[slot * H], x + s.rows[slot] * H, H * sizeof(float));
  std::vector<MatmulTarget> targets;
  targets.reserve(3 * E);  // no reallocation: the inputs' spans point into it
  std::vector<MatmulInput> gate_up, down;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t first = s.first_slot[e], m = s.first_slot[e + 1] - first;
    if (m == 0) continue;
    const MlpExpert& ex = mlp.experts[e];
    targets.push_back({ex.gate_proj, &s.gate[first * W]});
    targets.push_back({ex.up_proj, &s.up[first * W]});
    gate_up.push_back({&s.x[first * H], m, std::span(targets).last(2)});
    targets.push_back({ex.down_proj, &s.y[first * H]});
    down.push_back({&s.gate[first * W], m, std::span(targets).last(1)});
  }
  matmul_each(gate_up, pool);
  silu_mul(s.gate.data(), s.up.data(), n * K * W, s.gate.data(), pool);
  matmul_each(down, pool);

  // transformers: each expert's output times its weight, added to the row's
  // sum, expert after expert.
  s.sum.assign(n * H, 0.0f);
  for (int64_t slot = 0; slot < n * K; ++slot) {
    float* o = &s.sum[s.rows[slot] * H];
    const float* y = &s.y[slot * H];
    const float w = s.row_weights[slot];
    for (int64_t h = 0; h < H; ++h) o[h] += y[h] * w;
  }
  std::copy(s.sum.begin(), s.sum.end(), out);
}

}  // namespace qinfer
