// The non-matmul kernels of a transformer forward pass. They know nothing of
// the model: shapes and pointers in, results out. Activations are f32.
#pragma once
#include <cstdint>

#include "util/thread_pool.h"

namespace qinfer {

// out[r] = w * x[r] / sqrt(mean(x[r]^2) + eps) for each of n rows of length dim
// (in place when out == x). Statistics in f32.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out);

// Rotary embedding, rotate_half pairing (i with i + hd/2), in place on
// x[n, n_heads, hd]; row t is at position positions[t]. inv_freq has hd/2 entries.
void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const int32_t* positions, const float* inv_freq);

// inv_freq[i] = theta^(-2i/hd), rounded to f32 as transformers does.
void rope_inv_freq(double theta, int64_t hd, float* inv_freq);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// In-place softmax of x[0..n), computed in f32 with the max subtracted.
void softmax(float* x, int64_t n);

// Causal grouped-query attention for n query rows at positions pos0 .. pos0+n-1,
// over keys/values for positions [0, pos0+n) stored as [pos, n_kv, hd] rows.
// q and out are [n, n_heads, hd]; query head h reads kv head h / (n_heads/n_kv).
// Each K and V row is read once per step for all query heads of its group.
struct AttentionShape {
  int64_t n_heads, n_kv, hd;
};
void attention(const float* q, int64_t n, int64_t pos0, const float* k, const float* v, const AttentionShape& s,
               float* out, ThreadPool& pool);

}  // namespace qinfer
