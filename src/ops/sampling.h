// The sampler's passes over a whole row of logits (V = 151,936 for Qwen3),
// as SIMD kernels dispatched at run time; runtime/sampler.cpp holds the
// selection logic that calls them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace qinfer::sampling {

// x[i] = NaN ? -inf : min(x[i], FLT_MAX); returns the largest.
float sanitize_max(std::span<float> x);

// The first i in [begin, x.size()) with x[i] >= threshold, or x.size().
size_t find_first_at_least(std::span<const float> x, size_t begin, float threshold);

// out[i] = min(exp((x[i] - max) / temperature), 1) for i < x.size(); out may
// alias x. Returns whether some out[i] is 0 (-inf logits, underflow).
bool exp_weights(std::span<const float> x, float max, float temperature, float* out);

// Sum of the w[i] >= threshold, accumulated in double.
double mass_at_least(std::span<const float> w, float threshold);

// Moves the pairs (ids[i], w[i]) with w[i] >= threshold to the front, in
// order; returns how many there are. ids and w have the same size.
size_t keep_at_least(std::span<int32_t> ids, std::span<float> w, float threshold);

}  // namespace qinfer::sampling
