#include "model/kv_cache.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions)
    : row_(n_kv_heads * head_dim), max_positions_(max_positions), k_(n_layers), v_(n_layers) {}

void KvCache::ensure(int64_t n) {
  if (n <= capacity_) return;
  if (n > max_positions_)
    fail("the sequence needs ", n, " positions but the context length is ", max_positions_, " tokens");
  capacity_ = std::min(max_positions_, std::max({n, 2 * capacity_, int64_t{64}}));
  for (auto& layer : k_) layer.resize(static_cast<size_t>(capacity_ * row_));
  for (auto& layer : v_) layer.resize(static_cast<size_t>(capacity_ * row_));
}

}  // namespace qinfer
