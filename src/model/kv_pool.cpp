#include "model/kv_pool.h"

#include <algorithm>
#include <vector>

#include "ops/simd.h"
#include "util/error.h"

namespace qinfer {

KvPool::KvPool(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, int64_t n_blocks, int64_t block_size,
               DType dtype)
    : n_kv_heads_(n_kv_heads), head_dim_(head_dim), n_blocks_(n_blocks), block_size_(block_size), dtype_(dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    fail("KV cache dtype must be F32, F16 or BF16, not ", dtype_name(dtype));
  if (n_blocks <= 0 || block_size <= 0) fail("KV pool: ", n_blocks, " blocks of ", block_size, " positions");
  // Sizes from the command line (--block-size, --kv-blocks) can be anything: a
  // product that wraps would map too little and write past it.
  size_t bytes = 2 * dtype_size(dtype);
  for (const int64_t factor : {block_size, row(), n_layers, n_blocks})
    if (factor < 0 || __builtin_mul_overflow(bytes, static_cast<size_t>(factor), &bytes) || bytes > (size_t{1} << 52))
      fail("a KV pool of ", n_blocks, " blocks of ", block_size, " positions is larger than the address space");
  block_bytes_ = 2 * static_cast<size_t>(block_size * row()) * dtype_size(dtype);
  try {
    memory_ = OwnedBytes::reserve(bytes);
  } catch (const Error& e) {
    fail(e.what(), " for the KV cache of ", n_blocks * block_size, " positions");
  }
}

void KvPool::store(int64_t layer, const int32_t* table, int64_t pos, int64_t n, const float* k, const float* v) {
  const size_t elem = dtype_size(dtype_), half = block_bytes_ / 2;
  uint8_t* layer_base = memory_.data() + static_cast<size_t>(layer * n_blocks_) * block_bytes_;
  for (int64_t p = pos; p < pos + n;) {  // the run of positions within one block
    const int64_t block = table[p / block_size_], in_block = p % block_size_;
    if (block < 0 || block >= n_blocks_) fail("KV pool: block id ", block, " outside [0, ", n_blocks_, ")");
    const int64_t count = std::min(block_size_ - in_block, pos + n - p);
    uint8_t* keys = layer_base + static_cast<size_t>(block) * block_bytes_;
    const size_t elems = static_cast<size_t>(count * row());
    thread_local std::vector<uint8_t> narrowed;
    narrowed.resize(2 * elems * elem);
    simd::narrow_f32(k + (p - pos) * row(), elems, dtype_, narrowed.data());
    simd::narrow_f32(v + (p - pos) * row(), elems, dtype_, narrowed.data() + elems * elem);
    store_in_block(narrowed.data(), narrowed.data() + elems * elem, dtype_, count, n_kv_heads_, head_dim_, block_size_,
                   in_block, keys, keys + half);
    p += count;
  }
}

KvBlocks KvPool::blocks(int64_t layer, const int32_t* table) const {
  const uint8_t* layer_base = memory_.data() + static_cast<size_t>(layer * n_blocks_) * block_bytes_;
  return {layer_base, layer_base + block_bytes_ / 2, block_bytes_, table, block_size_, dtype_};
}

}  // namespace qinfer
