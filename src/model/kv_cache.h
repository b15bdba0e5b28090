// Keys and values of every layer for the positions a sequence has seen, so a
// decode step attends over them instead of recomputing the prompt. Layout per
// layer: [position, kv_head, head_dim] rows, in f32 (exact) or a 16-bit type
// (F16, BF16: half the memory and half the bytes a decode step reads).
// Memory grows with the sequence (doubling) up to max_positions, so a
// 40k-token context costs nothing until it is used.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/dtype.h"

namespace qinfer {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype = DType::F32);

  DType dtype() const { return dtype_; }
  int64_t max_positions() const { return max_positions_; }
  int64_t capacity() const { return capacity_; }
  // Makes room for positions [0, n); Error when n > max_positions. Invalidates pointers.
  void ensure(int64_t n);

  // Stores the f32 keys and values [n, n_kv_heads * head_dim] of positions
  // [pos, pos + n) of a layer (converted to dtype()).
  void store(int64_t layer, int64_t pos, int64_t n, const float* k, const float* v);
  // Rows of a layer from position 0, n_kv_heads * head_dim elements each.
  const void* keys(int64_t layer) const { return k_[layer].data(); }
  const void* values(int64_t layer) const { return v_[layer].data(); }
  size_t bytes() const { return 2 * k_.size() * static_cast<size_t>(capacity_ * row_) * dtype_size(dtype_); }

 private:
  int64_t row_, max_positions_, capacity_ = 0;
  DType dtype_;
  std::vector<std::vector<uint8_t>> k_, v_;
};

}  // namespace qinfer
