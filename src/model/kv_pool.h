// Keys and values of many sequences in one pool of fixed-size blocks
// (PagedAttention's layout): a sequence owns a table of block ids, position
// p of it lives in block table[p / block_size]. Layout: [layer][block][k|v],
// a block's keys transposed, [kv_head][head_dim][position in block], its
// values [kv_head][position in block][head_dim] (KvBlocks in ops.h), in f32
// (exact) or a 16-bit type.
// Address space for every block is reserved up front; pages are committed as
// positions are first written, so an idle pool costs nothing. They are huge
// pages (OwnedBytes): first touch of KV memory bounded one-shot runs, and a
// 2 MiB fault costs far less than 512 of 4 KiB (docs/performance.md).
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/ops.h"
#include "util/dtype.h"
#include "util/owned_bytes.h"

namespace qinfer {

class KvPool {
 public:
  KvPool(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t n_blocks, int64_t block_size,
         DType dtype = DType::F32);

  DType dtype() const { return dtype_; }
  int64_t block_size() const { return block_size_; }
  int64_t n_blocks() const { return n_blocks_; }
  // Address space reserved for every block of every layer; pages are
  // committed as blocks are first written.
  size_t bytes() const { return memory_.size(); }

  // Stores the f32 keys and values [n, n_kv_heads * head_dim] of positions
  // [pos, pos + n) of the sequence with block table `table` (converted to
  // dtype()); the table must cover them.
  void store(int64_t layer, const int32_t* table, int64_t pos, int64_t n, const float* k, const float* v);
  // A sequence's keys and values of a layer, for attention().
  KvBlocks blocks(int64_t layer, const int32_t* table) const;

 private:
  int64_t row() const { return n_kv_heads_ * head_dim_; }  // elements of one position's keys (or values)
  int64_t n_kv_heads_, head_dim_, n_blocks_, block_size_;
  DType dtype_;
  size_t block_bytes_ = 0;  // keys and values of one block of one layer
  OwnedBytes memory_;
};

}  // namespace qinfer
