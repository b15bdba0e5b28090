#include "model/kv_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "ops/simd.h"
#include "util/error.h"

namespace qinfer {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype)
    : n_layers_(n_layers), row_(n_kv_heads * head_dim), max_positions_(max_positions), dtype_(dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    fail("KV cache dtype must be F32, F16 or BF16, not ", dtype_name(dtype));
  const size_t page = 4096;
  layer_bytes_ = (static_cast<size_t>(max_positions * row_) * dtype_size(dtype) + page - 1) / page * page;
  mapped_bytes_ = 2 * static_cast<size_t>(n_layers) * layer_bytes_;
  if (mapped_bytes_ == 0) return;
  void* p = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot reserve ", mapped_bytes_ >> 20, " MiB of address space for the KV cache (", max_positions,
         " positions): ", std::strerror(errno));
  base_ = static_cast<uint8_t*>(p);
}

KvCache::~KvCache() { release(); }

void KvCache::release() {
  if (base_) ::munmap(base_, mapped_bytes_);
  base_ = nullptr;
}

KvCache::KvCache(KvCache&& o) noexcept
    : n_layers_(o.n_layers_), row_(o.row_), max_positions_(o.max_positions_), used_(o.used_), dtype_(o.dtype_),
      layer_bytes_(o.layer_bytes_), mapped_bytes_(o.mapped_bytes_), base_(std::exchange(o.base_, nullptr)) {}

KvCache& KvCache::operator=(KvCache&& o) noexcept {
  if (this != &o) {
    release();
    n_layers_ = o.n_layers_;
    row_ = o.row_;
    max_positions_ = o.max_positions_;
    used_ = o.used_;
    dtype_ = o.dtype_;
    layer_bytes_ = o.layer_bytes_;
    mapped_bytes_ = o.mapped_bytes_;
    base_ = std::exchange(o.base_, nullptr);
  }
  return *this;
}

void KvCache::ensure(int64_t n) {
  if (n > max_positions_)
    fail("the sequence needs ", n, " positions but the context length is ", max_positions_, " tokens");
}

void KvCache::store(int64_t layer, int64_t pos, int64_t n, const float* k, const float* v) {
  ensure(pos + n);
  const size_t offset = static_cast<size_t>(pos * row_) * dtype_size(dtype_), count = static_cast<size_t>(n * row_);
  simd::narrow_f32(k, count, dtype_, base_ + 2 * layer * layer_bytes_ + offset);
  simd::narrow_f32(v, count, dtype_, base_ + (2 * layer + 1) * layer_bytes_ + offset);
  used_ = std::max(used_, pos + n);
}

}  // namespace qinfer
