#include "model/kv_cache.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype)
    : pool_(n_layers, n_kv_heads, head_dim,
            std::max<int64_t>(1, max_positions / kBlockPositions + (max_positions % kBlockPositions != 0)),
            kBlockPositions, dtype),  // no max_positions + kBlockPositions - 1: a config may say 2^63 - 1
      table_(static_cast<size_t>(pool_.n_blocks())),
      max_positions_(max_positions),
      n_layers_(n_layers),
      row_(n_kv_heads * head_dim) {
  std::iota(table_.begin(), table_.end(), 0);
}

void KvCache::ensure(int64_t n) {
  if (n > max_positions())
    fail("the sequence needs ", n, " positions but the context length is ", max_positions(), " tokens");
}

void KvCache::note_written(int64_t n) { used_ = std::max(used_, n); }

}  // namespace qinfer
