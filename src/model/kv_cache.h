// Keys and values of every layer for the positions one sequence has seen, so
// a decode step attends over them instead of recomputing the prompt: a KV
// pool (kv_pool.h) whose blocks, in order, cover the context, in f32 (exact)
// or a 16-bit type (F16, BF16: half the memory and half the bytes a decode
// step reads). Address space for the whole context is reserved up front but
// pages are committed only as blocks are written (a block's keys at its first
// position, as they are stored transposed), so a 40k-token context costs
// nothing until it is used and growing never copies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_pool.h"
#include "util/dtype.h"

namespace qinfer {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t max_positions, DType dtype = DType::F32);

  DType dtype() const { return pool_.dtype(); }
  int64_t max_positions() const { return max_positions_; }
  // Positions [0, n) are usable; Error when n > max_positions.
  void ensure(int64_t n);

  // The pool and block table forward() reads and writes through.
  KvPool& pool() { return pool_; }
  std::span<const int32_t> table() const { return table_; }
  // Records that positions [0, n) have been written.
  void note_written(int64_t n);
  // Bytes of the positions written so far (what is resident).
  size_t bytes() const { return 2 * static_cast<size_t>(n_layers_ * used_ * row_) * dtype_size(pool_.dtype()); }

 private:
  // Positions per block: a block's keys are 256 KiB per layer for Qwen3's
  // 8 kv heads of 128 in F16.
  static constexpr int64_t kBlockPositions = 128;
  KvPool pool_;
  std::vector<int32_t> table_;  // 0, 1, 2, ...
  int64_t max_positions_, n_layers_, row_, used_ = 0;
};

}  // namespace qinfer
