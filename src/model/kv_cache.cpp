#include "model/kv_cache.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype)
    : pool_(n_layers, n_kv_heads, head_dim, 1, max_positions, dtype),
      n_layers_(n_layers),
      row_(n_kv_heads * head_dim) {}

void KvCache::ensure(int64_t n) {
  if (n > max_positions())
    fail("the sequence needs ", n, " positions but the context length is ", max_positions(), " tokens");
}

void KvCache::note_written(int64_t n) { used_ = std::max(used_, n); }

}  // namespace qinfer
