#include "model/kv_cache.h"

#include <algorithm>

#include "ops/simd.h"
#include "util/error.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype)
    : row_(n_kv_heads * head_dim), max_positions_(max_positions), dtype_(dtype), k_(n_layers), v_(n_layers) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    fail("KV cache dtype must be F32, F16 or BF16, not ", dtype_name(dtype));
}

void KvCache::ensure(int64_t n) {
  if (n <= capacity_) return;
  if (n > max_positions_)
    fail("the sequence needs ", n, " positions but the context length is ", max_positions_, " tokens");
  capacity_ = std::min(max_positions_, std::max({n, 2 * capacity_, int64_t{64}}));
  const size_t bytes = static_cast<size_t>(capacity_ * row_) * dtype_size(dtype_);
  for (auto& layer : k_) layer.resize(bytes);
  for (auto& layer : v_) layer.resize(bytes);
}

void KvCache::store(int64_t layer, int64_t pos, int64_t n, const float* k, const float* v) {
  const size_t offset = static_cast<size_t>(pos * row_) * dtype_size(dtype_), count = static_cast<size_t>(n * row_);
  simd::narrow_f32(k, count, dtype_, &k_[layer][offset]);
  simd::narrow_f32(v, count, dtype_, &v_[layer][offset]);
}

}  // namespace qinfer
