// Keys and values of every layer for the positions a sequence has seen, so a
// decode step attends over them instead of recomputing the prompt. Layout per
// layer: [position, kv_head, head_dim] rows, in f32 (exact) or a 16-bit type
// (F16, BF16: half the memory and half the bytes a decode step reads).
// Address space for the whole context is reserved up front but pages are
// committed only as positions are written, so a 40k-token context costs
// nothing until it is used and growing never copies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/dtype.h"

namespace qinfer {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype = DType::F32);
  ~KvCache();
  KvCache(KvCache&& other) noexcept;
  KvCache& operator=(KvCache&& other) noexcept;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  DType dtype() const { return dtype_; }
  int64_t max_positions() const { return max_positions_; }
  // Positions [0, n) are usable; Error when n > max_positions.
  void ensure(int64_t n);

  // Stores the f32 keys and values [n, n_kv_heads * head_dim] of positions
  // [pos, pos + n) of a layer (converted to dtype()).
  void store(int64_t layer, int64_t pos, int64_t n, const float* k, const float* v);
  // Rows of a layer from position 0, n_kv_heads * head_dim elements each.
  const void* keys(int64_t layer) const { return base_ + 2 * layer * layer_bytes_; }
  const void* values(int64_t layer) const { return base_ + (2 * layer + 1) * layer_bytes_; }
  // Bytes of the positions written so far (what is resident).
  size_t bytes() const { return 2 * static_cast<size_t>(n_layers_ * used_ * row_) * dtype_size(dtype_); }

 private:
  void release();
  int64_t n_layers_, row_, max_positions_, used_ = 0;
  DType dtype_;
  size_t layer_bytes_ = 0, mapped_bytes_ = 0;
  uint8_t* base_ = nullptr;  // [layer][k or v][position][row], reserved with mmap
};

}  // namespace qinfer
