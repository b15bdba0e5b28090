// Plain scalar versions of the kernels, in double precision, written straight
// from the formulas: the yardstick the optimised kernels are tested against.
#pragma once
#include <cstdint>

namespace qinfer::ref {

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out);
void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const int32_t* positions, double theta);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void softmax(float* x, int64_t n);
void attention(const float* q, int64_t n, int64_t pos0, const float* k, const float* v, int64_t n_heads, int64_t n_kv,
               int64_t hd, float* out);

}  // namespace qinfer::ref
