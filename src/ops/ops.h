// The non-matmul kernels of a transformer forward pass. They know nothing of
// the model: shapes and pointers in, results out. Activations are f32.
#pragma once
#include <cstdint>
#include <span>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace qinfer {

// out[r] = w * x[r] / sqrt(mean(x[r]^2) + eps) for each of n rows of length dim
// (in place when out == x). Statistics in f32.
// Many rows are shared out among the pool's threads (each row's result is
// the same either way), as are rope's positions and add_in_place's elements.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out, ThreadPool& pool);

// inv_freq[i] = theta^(-2i/hd), rounded to f32 as transformers does.
void rope_inv_freq(double theta, int64_t hd, float* inv_freq);

// YaRN's frequencies (transformers' "yarn" rope type): rope_inv_freq's, kept
// for the dimensions that turn more than beta_fast times within
// original_context positions, divided by `factor` for those that turn fewer
// than beta_slow times, and blended linearly in the dimension index between
// (the bounds rounded outward when `truncate`, as transformers does by default).
void yarn_inv_freq(double theta, int64_t hd, double factor, double original_context, double beta_fast, double beta_slow,
                   bool truncate, float* inv_freq);

// cos/sin of position * inv_freq for n positions, times `scale` (YaRN's
// attention factor; 1 otherwise): cs[t * hd + i] = cos, cs[t * hd + hd/2 + i] = sin,
// i < hd/2. Computed once per forward pass and shared by every layer.
void rope_cos_sin(const int32_t* positions, int64_t n, const float* inv_freq, int64_t hd, float* cs,
                  float scale = 1.0f);

// Rotary embedding, rotate_half pairing (i with i + hd/2), in place on
// x[n, n_heads, hd]; row t uses cs[t * hd ...] from rope_cos_sin.
void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const float* cs, ThreadPool& pool);

// x[i] += y[i] for i < n (the residual connections).
void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool);

// out[i] = silu(gate[i]) * up[i], shared out among the pool's threads.
void silu_mul(const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool);

// In-place softmax of x[0..n), computed in f32 with the max subtracted.
void softmax(float* x, int64_t n);

// Top-k routing of a mixture of experts, row by row: of the softmax of each
// row of logits [n, n_experts], the k largest probabilities, largest first
// (ties: the lower expert first; NaN last), their experts in experts[n, k]
// and the probabilities in weights[n, k], divided by their sum when
// `normalize` (transformers' norm_topk_prob).
void route_top_k(const float* logits, int64_t n, int64_t n_experts, int64_t k, bool normalize, int32_t* experts,
                 float* weights);

// Causal grouped-query attention for n query rows at positions pos0 .. pos0+n-1,
// over keys/values for positions [0, pos0+n) stored as [pos, n_kv, hd] rows of
// kv_type (F32, F16 or BF16). q and out are [n, n_heads, hd]; query head h
// reads kv head h / (n_heads/n_kv).
// Work is split into (kv head, block of query positions) tasks; a task reads
// each key and value once for all query heads of its group and all positions
// of its block, with outer-product register tiles (keys in the vector lanes
// for the scores, head_dim for the values). A query row's result does not
// depend on the block it is computed in (decode equals prefill bit for bit),
// nor on how its keys are cut into blocks of storage.
// A query row whose visible keys span more than kAttentionKeyChunk positions
// is computed chunk by chunk (keys [0, C), [C, 2C), ...), each chunk a task of
// its own, so one long sequence spreads over the threads (flash-decoding);
// the chunks' softmaxes are merged in chunk order. The chunks are fixed
// positions, so a row's arithmetic still depends only on its own position.
constexpr int64_t kAttentionKeyChunk = 512;

struct AttentionShape {
  int64_t n_heads, n_kv, hd;
};

// A sequence's keys and values in blocks of block_size positions: position p
// lives in block blocks[p / block_size] at index i = p % block_size. A block's
// keys start at keys + blocks[...] * block_stride, transposed per kv head,
// [n_kv][hd][block_size] (element (head h, dimension d) of index i at
// (h * hd + d) * block_size + i), so the score tile reads consecutive keys in
// its vector lanes; its values start at values + blocks[...] * block_stride,
// per kv head, [n_kv][block_size][hd], so a head's value rows are adjacent.
// One contiguous cache is a single block (block_stride unused).
struct KvBlocks {
  const uint8_t* keys;
  const uint8_t* values;
  size_t block_stride;
  const int32_t* blocks;
  int64_t block_size;
  DType type;
};

// Keys and values of n positions, [n][n_kv][hd] rows of `type` (F32, F16,
// BF16) as the k and v projections give them, into indices [at, at + n) of
// one block's keys and values (KvBlocks' layout).
void store_in_block(const void* k, const void* v, DType type, int64_t n, int64_t n_kv, int64_t hd, int64_t block_size,
                    int64_t at, void* block_keys, void* block_values);

// One sequence's share of a batched attention call.
struct AttentionSeq {
  const float* q;  // [n, n_heads, hd]
  float* out;      // [n, n_heads, hd]
  int64_t n, pos0;
  KvBlocks kv;
};

// The sequences of a batch in one parallel section (tasks of all of them
// shared out among the threads, the longest first).
void attention(std::span<const AttentionSeq> seqs, const AttentionShape& s, ThreadPool& pool);

// One sequence over contiguous keys and values, [pos0 + n][n_kv][hd] rows as
// the k and v projections give them (stored into one block first): for the
// tests and benchmarks.
void attention(const float* q, int64_t n, int64_t pos0, const void* k, const void* v, DType kv_type,
               const AttentionShape& s, float* out, ThreadPool& pool);
inline void attention(const float* q, int64_t n, int64_t pos0, const float* k, const float* v, const AttentionShape& s,
                      float* out, ThreadPool& pool) {
  attention(q, n, pos0, k, v, DType::F32, s, out, pool);
}

}  // namespace qinfer
