#include "ops/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/matmul_kernels.h"
#include "ops/simd.h"

namespace qinfer {

namespace {
// Query positions per attention task: enough rows that a K or V row loaded
// serves many queries, few enough that the tasks balance across threads.
constexpr int64_t kQueryBlock = 16;
// Elementwise work below this many elements stays on the calling thread.
constexpr int64_t kParallelElements = 1 << 15;
}  // namespace

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    const float ms = simd::dot(xr, xr, static_cast<size_t>(dim)) / static_cast<float>(dim);
    const float inv = 1.0f / std::sqrt(ms + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * inv);
  }
}

void rope_inv_freq(double theta, int64_t hd, float* inv_freq) {
  for (int64_t i = 0; i < hd / 2; ++i)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(hd)));
}

void rope_cos_sin(const int32_t* positions, int64_t n, const float* inv_freq, int64_t hd, float* cs) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < half; ++i) {
      // The angle is an f32 product, as transformers computes it; cos/sin of it are exact.
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];
      cs[t * hd + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      cs[t * hd + half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
}

void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const float* cs) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cs + t * hd;
    const float* s = c + half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * hd;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool) {
  const size_t grain = static_cast<size_t>(kParallelElements);
  if (n < kParallelElements) return simd::silu_mul(gate, up, static_cast<size_t>(n), out);
  pool.parallel_for(static_cast<size_t>(n), grain / 4,
                    [&](size_t b, size_t e) { simd::silu_mul(gate + b, up + b, e - b, out + b); });
}

void softmax(float* x, int64_t n) { simd::softmax_scaled(x, static_cast<size_t>(n), 1.0f); }

void attention(std::span<const AttentionSeq> seqs, const AttentionShape& s, ThreadPool& pool) {
  const int64_t group = s.n_heads / s.n_kv, hd = s.hd, kv_stride = s.n_kv * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Tasks: (sequence, block of query positions, kv head), the ones that see
  // the most keys first so the threads finish together.
  struct Task {
    const AttentionSeq* seq;
    int64_t t0, t1, kvh;
  };
  std::vector<Task> tasks;
  for (const AttentionSeq& q : seqs)
    for (int64_t t0 = 0; t0 < q.n; t0 += kQueryBlock)
      for (int64_t kvh = 0; kvh < s.n_kv; ++kvh) tasks.push_back({&q, t0, std::min(q.n, t0 + kQueryBlock), kvh});
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& a, const Task& b) { return a.seq->pos0 + a.t1 > b.seq->pos0 + b.t1; });
  pool.parallel_for_dynamic(tasks.size(), 1, [&](size_t task0, size_t task1) {
    thread_local std::vector<float> qb, scores, ob;
    for (size_t i = task0; i < task1; ++i) {
      const Task& task = tasks[i];
      const AttentionSeq& sq = *task.seq;
      const KvBlocks& kv = sq.kv;
      const int64_t t0 = task.t0, t1 = task.t1, kvh = task.kvh;
      const int64_t rows = (t1 - t0) * group, len = sq.pos0 + t1;  // keys 0 .. the block's last position
      // The block's query rows (position-major, then the group's heads) gathered contiguously.
      qb.resize(static_cast<size_t>(rows * hd));
      for (int64_t t = t0; t < t1; ++t)
        std::copy_n(sq.q + (t * s.n_heads + kvh * group) * hd, group * hd, &qb[(t - t0) * group * hd]);
      scores.resize(static_cast<size_t>(rows * len));
      const size_t head_offset = static_cast<size_t>(kvh * hd) * dtype_size(kv.type);
      auto each_block = [&](auto&& fn) {  // fn(first position, positions, keys, values) over [0, len)
        for (int64_t p0 = 0; p0 < len; p0 += kv.block_size) {
          const size_t at = static_cast<size_t>(kv.blocks[p0 / kv.block_size]) * kv.block_stride + head_offset;
          fn(p0, std::min(kv.block_size, len - p0), kv.keys + at, kv.values + at);
        }
      };
      each_block([&](int64_t p0, int64_t count, const uint8_t* k, const uint8_t*) {
        kernels::attention_scores(qb.data(), rows, hd, k, kv.type, count, kv_stride, hd, &scores[p0], len);
      });
      for (int64_t r = 0; r < rows; ++r) {
        // Causal: query at position pos0 + t sees keys 0 .. pos0 + t; the rest weigh 0.
        const int64_t visible = sq.pos0 + t0 + r / group + 1;
        float* row = &scores[r * len];
        simd::softmax_scaled(row, static_cast<size_t>(visible), scale);
        std::fill(row + visible, row + len, 0.0f);
      }
      ob.assign(static_cast<size_t>(rows * hd), 0.0f);
      // Block after block, each value row accumulated in position order, as
      // over one contiguous cache.
      each_block([&](int64_t p0, int64_t count, const uint8_t*, const uint8_t* v) {
        kernels::attention_values(&scores[p0], rows, len, v, kv.type, count, kv_stride, hd, ob.data(), hd);
      });
      for (int64_t t = t0; t < t1; ++t)
        std::copy_n(&ob[(t - t0) * group * hd], group * hd, sq.out + (t * s.n_heads + kvh * group) * hd);
    }
  });
}

void attention(const float* q, int64_t n, int64_t pos0, const void* k, const void* v, DType kv_type,
               const AttentionShape& s, float* out, ThreadPool& pool) {
  const int32_t block = 0;
  const AttentionSeq seq{
      q, out, n, pos0, {static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v), 0, &block, pos0 + n, kv_type}};
  attention(std::span(&seq, 1), s, pool);
}

}  // namespace qinfer
