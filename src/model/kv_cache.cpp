#include "model/kv_cache.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t capacity)
    : n_layers_(n_layers), row_(n_kv_heads * head_dim), capacity_(capacity),
      k_(static_cast<size_t>(n_layers * capacity * row_)), v_(k_.size()) {}

}  // namespace qinfer
