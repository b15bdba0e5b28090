// Keys and values of every layer for the positions a sequence has seen, so a
// decode step attends over them instead of recomputing the prompt. Layout per
// layer: [position, kv_head, head_dim] f32 rows, which is exactly what the K
// and V projections produce, so they are written in place. Memory grows with
// the sequence (doubling) up to max_positions, so a 40k-token context costs
// nothing until it is used.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qinfer {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions);

  int64_t max_positions() const { return max_positions_; }
  int64_t capacity() const { return capacity_; }
  // Makes room for positions [0, n); Error when n > max_positions. Invalidates pointers.
  void ensure(int64_t n);

  float* k(int64_t layer, int64_t pos) { return &k_[layer][pos * row_]; }
  float* v(int64_t layer, int64_t pos) { return &v_[layer][pos * row_]; }
  size_t bytes() const { return 2 * k_.size() * static_cast<size_t>(capacity_ * row_) * sizeof(float); }

 private:
  int64_t row_, max_positions_, capacity_ = 0;
  std::vector<std::vector<float>> k_, v_;
};

}  // namespace qinfer
