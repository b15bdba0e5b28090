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
  int64_t most = 0;
  for (int64_t e = 0; e < E; ++e) {
    most = std::max(most, s.first_slot[e + 1]);
    s.first_slot[e + 1] += s.first_slot[e];
  }
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

  s.x.resize(most * H);
  s.gate.resize(most * W);
  s.up.resize(most * W);
  s.y.resize(most * H);
  s.sum.assign(n * H, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t first = s.first_slot[e], m = s.first_slot[e + 1] - first;
    if (m == 0) continue;
    const MlpExpert& ex = mlp.experts[e];
    for (int64_t i = 0; i < m; ++i) std::memcpy(&s.x[i * H], x + s.rows[first + i] * H, H * sizeof(float));
    matmul(s.x.data(), m, {{ex.gate_proj, s.gate.data()}, {ex.up_proj, s.up.data()}}, pool);
    silu_mul(s.gate.data(), s.up.data(), m * W, s.gate.data(), pool);
    matmul(s.gate.data(), m, ex.down_proj, s.y.data(), pool);
    // transformers: the expert's output times its weight, then added to the row's sum.
    for (int64_t i = 0; i < m; ++i) {
      float* o = &s.sum[s.rows[first + i] * H];
      const float* y = &s.y[i * H];
      const float w = s.row_weights[first + i];
      for (int64_t h = 0; h < H; ++h) o[h] += y[h] * w;
    }
  }
  std::copy(s.sum.begin(), s.sum.end(), out);
}

}  // namespace qinfer
