// Keys and values of every layer for the positions a sequence has seen, so a
// decode step attends over them instead of recomputing the prompt. Layout per
// layer: [position, kv_head, head_dim] f32 rows, which is exactly what the K
// and V projections produce, so they are written in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qinfer {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t capacity);

  int64_t capacity() const { return capacity_; }
  int64_t row_size() const { return row_; }  // floats per position per layer
  float* k(int64_t layer, int64_t pos) { return &k_[(layer * capacity_ + pos) * row_]; }
  float* v(int64_t layer, int64_t pos) { return &v_[(layer * capacity_ + pos) * row_]; }
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

 private:
  int64_t n_layers_, row_, capacity_;
  std::vector<float> k_, v_;
};

}  // namespace qinfer
