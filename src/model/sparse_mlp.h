// The MLP block of a Qwen3-MoE sparse layer: a router picks, per token, a
// few of many SwiGLU experts, and their outputs are summed weighted by the
// router's probabilities (transformers' Qwen3MoeSparseMoeBlock).
#pragma once
#include <cstdint>
#include <vector>

#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace qinfer {

struct MlpExpert {
  WeightMatrix gate_proj, up_proj, down_proj;  // [width, hidden], [width, hidden], [hidden, width]
};

struct SparseMlp {
  WeightMatrix router;             // mlp.gate: [experts, hidden]
  std::vector<MlpExpert> experts;  // all of the same width
  int64_t top_k = 0;               // experts per token
  bool normalize = false;          // the top_k probabilities divided by their sum (norm_topk_prob)
};

// Buffers reused between calls, so decode does not allocate.
struct SparseMlpState {
  std::vector<float> router_logits, weights, x, gate, up, y, sum;
  std::vector<int32_t> experts;
  std::vector<int64_t> first_slot;  // per expert, where its (row, weight) pairs start in rows/row_weights
  std::vector<int64_t> rows;
  std::vector<float> row_weights;
};

// out[n, hidden] = the sparse MLP of the rows x[n, hidden] (out may be x). Each expert runs
// once over the rows routed to it, and each row's sum is taken over its
// experts in expert order, as transformers adds them; a matrix's rows do not
// depend on how many rows share the call (ops/matmul.h), so a row's result
// does not depend on the other rows.
void sparse_mlp(const SparseMlp& mlp, const float* x, int64_t n, float* out, SparseMlpState& s, ThreadPool& pool);

}  // namespace qinfer
