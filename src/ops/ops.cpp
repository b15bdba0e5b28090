#include "ops/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
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

namespace {
// fn(begin, end) over [0, n) items of `cost` elements each: on the calling
// thread when there are few elements, else shared out among the threads.
void over_items(int64_t n, int64_t cost, ThreadPool& pool, const std::function<void(size_t, size_t)>& fn) {
  if (n * cost < kParallelElements)
    fn(0, static_cast<size_t>(n));
  else
    pool.parallel_for(static_cast<size_t>(n), 1, fn);
}
}  // namespace

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out, ThreadPool& pool) {
  over_items(n, dim, pool, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * dim;
      float* yr = out + r * dim;
      const float ms = simd::dot(xr, xr, static_cast<size_t>(dim)) / static_cast<float>(dim);
      const float inv = 1.0f / std::sqrt(ms + eps);
      for (int64_t i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * inv);
    }
  });
}

void rope_inv_freq(double theta, int64_t hd, float* inv_freq) {
  for (int64_t i = 0; i < hd / 2; ++i)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(hd)));
}

void yarn_inv_freq(double theta, int64_t hd, double factor, double original_context, double beta_fast, double beta_slow,
                   bool truncate, float* inv_freq) {
  // The dimension whose frequency turns `rotations` times within the original context.
  auto dimension = [&](double rotations) {
    return static_cast<double>(hd) * std::log(original_context / (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(theta));
  };
  double low = dimension(beta_fast), high = dimension(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(hd - 1));
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  for (int64_t i = 0; i < hd / 2; ++i) {
    const double extrapolation = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(hd));
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    inv_freq[i] = static_cast<float>(extrapolation / factor * ramp + extrapolation * (1 - ramp));
  }
}

void rope_cos_sin(const int32_t* positions, int64_t n, const float* inv_freq, int64_t hd, float* cs, float scale) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < half; ++i) {
      // The angle is an f32 product, as transformers computes it; cos/sin of it are exact,
      // then scaled in f32 as transformers scales them.
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];
      cs[t * hd + i] = static_cast<float>(std::cos(static_cast<double>(angle))) * scale;
      cs[t * hd + half + i] = static_cast<float>(std::sin(static_cast<double>(angle))) * scale;
    }
}

void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const float* cs, ThreadPool& pool) {
  const int64_t half = hd / 2;
  over_items(n, n_heads * hd, pool, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      const float* c = cs + t * hd;
      const float* s = c + half;
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + (static_cast<int64_t>(t) * n_heads + h) * hd;
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * c[i] - b * s[i];
          v[i + half] = b * c[i] + a * s[i];
        }
      }
    }
  });
}

void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool) {
  over_items(n, 1, pool, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) x[i] += y[i];
  });
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool) {
  const size_t grain = static_cast<size_t>(kParallelElements);
  if (n < kParallelElements) return simd::silu_mul(gate, up, static_cast<size_t>(n), out);
  pool.parallel_for(static_cast<size_t>(n), grain / 4,
                    [&](size_t b, size_t e) { simd::silu_mul(gate + b, up + b, e - b, out + b); });
}

void softmax(float* x, int64_t n) { simd::softmax_scaled(x, static_cast<size_t>(n), 1.0f); }

void route_top_k(const float* logits, int64_t n, int64_t n_experts, int64_t k, bool normalize, int32_t* experts,
                 float* weights) {
  std::vector<float> p(static_cast<size_t>(n_experts));
  std::vector<int32_t> order(static_cast<size_t>(n_experts));
  // NaN compares as -infinity, so the order stays a strict weak one.
  auto key = [&](int32_t e) { return std::isnan(p[e]) ? -std::numeric_limits<float>::infinity() : p[e]; };
  for (int64_t r = 0; r < n; ++r) {
    std::copy(logits + r * n_experts, logits + (r + 1) * n_experts, p.begin());
    softmax(p.data(), n_experts);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      experts[r * k + j] = order[j];
      weights[r * k + j] = normalize ? p[order[j]] / sum : p[order[j]];
    }
  }
}

void attention(std::span<const AttentionSeq> seqs, const AttentionShape& s, ThreadPool& pool) {
  const int64_t group = s.n_heads / s.n_kv, hd = s.hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Items: (sequence, block of query positions, kv head); an item whose keys
  // span several chunks writes each chunk's normalized partial result and
  // softmax statistics to `partials` for the merge below.
  struct Item {
    const AttentionSeq* seq;
    int64_t t0, t1, kvh, chunks;
    size_t partial;  // offset of its chunks' [rows, hd] results in partials
  };
  // Tasks: one chunk of one item, the largest first so the threads finish together.
  struct Task {
    const Item* item;
    int64_t chunk;
  };
  std::vector<Item> items;
  size_t partial_floats = 0;
  for (const AttentionSeq& q : seqs)
    for (int64_t t0 = 0; t0 < q.n; t0 += kQueryBlock)
      for (int64_t kvh = 0; kvh < s.n_kv; ++kvh) {
        const int64_t t1 = std::min(q.n, t0 + kQueryBlock), len = q.pos0 + t1;
        const int64_t chunks = (len + kAttentionKeyChunk - 1) / kAttentionKeyChunk;
        items.push_back({&q, t0, t1, kvh, chunks, partial_floats});
        if (chunks > 1) partial_floats += static_cast<size_t>(chunks * (t1 - t0) * group * hd);
      }
  std::vector<Task> tasks;
  for (const Item& item : items)
    for (int64_t c = 0; c < item.chunks; ++c) tasks.push_back({&item, c});
  auto keys_of = [](const Task& t) {
    return std::min(t.item->seq->pos0 + t.item->t1 - t.chunk * kAttentionKeyChunk, kAttentionKeyChunk);
  };
  std::stable_sort(tasks.begin(), tasks.end(), [&](const Task& a, const Task& b) { return keys_of(a) > keys_of(b); });
  // The calling thread's buffers, shared with the workers through these pointers.
  thread_local std::vector<float> partial_buffer;
  thread_local std::vector<simd::SoftmaxStats> stats_buffer;
  partial_buffer.resize(partial_floats);
  stats_buffer.resize(partial_floats / static_cast<size_t>(hd));
  float* const partials = partial_buffer.data();
  simd::SoftmaxStats* const stats = stats_buffer.data();
  pool.parallel_for_dynamic(tasks.size(), 1, [&](size_t task0, size_t task1) {
    thread_local std::vector<float> qb, scores, ob;
    for (size_t i = task0; i < task1; ++i) {
      const Item& item = *tasks[i].item;
      const AttentionSeq& sq = *item.seq;
      const KvBlocks& kv = sq.kv;
      const int64_t t0 = item.t0, t1 = item.t1, kvh = item.kvh;
      // Keys [c0, c1) of the chunk; query position t sees keys 0 .. pos0 + t.
      const int64_t c0 = tasks[i].chunk * kAttentionKeyChunk;
      const int64_t c1 = std::min(sq.pos0 + t1, c0 + kAttentionKeyChunk), len = c1 - c0;
      const int64_t rows = (t1 - t0) * group;
      // The block's query rows (position-major, then the group's heads) gathered contiguously.
      qb.resize(static_cast<size_t>(rows * hd));
      for (int64_t t = t0; t < t1; ++t)
        std::copy_n(sq.q + (t * s.n_heads + kvh * group) * hd, group * hd, &qb[(t - t0) * group * hd]);
      scores.resize(static_cast<size_t>(rows * len));
      kernels::attention_scores(qb.data(), static_cast<size_t>(rows), static_cast<size_t>(hd), kv,
                                static_cast<size_t>(kvh), static_cast<size_t>(hd), c0, c1, scores.data(),
                                static_cast<size_t>(len));
      simd::SoftmaxStats* row_stats =
          item.chunks > 1 ? &stats[(item.partial + static_cast<size_t>(tasks[i].chunk * rows * hd)) / hd] : nullptr;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t visible = std::clamp<int64_t>(sq.pos0 + t0 + r / group + 1 - c0, 0, len);
        float* row = &scores[r * len];
        const simd::SoftmaxStats st =
            visible > 0 ? simd::softmax_scaled(row, static_cast<size_t>(visible), scale) : simd::SoftmaxStats{0, 0};
        std::fill(row + visible, row + len, 0.0f);
        if (row_stats) row_stats[r] = st;
      }
      float* o = item.chunks > 1 ? &partials[item.partial + static_cast<size_t>(tasks[i].chunk * rows * hd)] : nullptr;
      if (!o) {
        ob.resize(static_cast<size_t>(rows * hd));
        o = ob.data();
      }
      kernels::attention_values(scores.data(), static_cast<size_t>(rows), static_cast<size_t>(len), kv,
                                static_cast<size_t>(kvh), static_cast<size_t>(hd), c0, c1, o, static_cast<size_t>(hd));
      if (item.chunks == 1)
        for (int64_t t = t0; t < t1; ++t)
          std::copy_n(&o[(t - t0) * group * hd], group * hd, sq.out + (t * s.n_heads + kvh * group) * hd);
    }
  });
  if (partial_floats == 0) return;
  // Each row of a chunked item: its chunks' results weighted by their share of
  // the whole softmax, in chunk order. A row that sees one chunk only gets
  // that chunk's result times exactly 1, the bits of an unchunked row.
  pool.parallel_for_dynamic(items.size(), 1, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const Item& item = items[i];
      if (item.chunks == 1) continue;
      const AttentionSeq& sq = *item.seq;
      const int64_t rows = (item.t1 - item.t0) * group;
      const size_t chunk_floats = static_cast<size_t>(rows * hd);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = item.t0 + r / group, seen = (sq.pos0 + t) / kAttentionKeyChunk + 1;  // chunks it sees
        auto stat = [&](int64_t c) { return stats[(item.partial + c * chunk_floats) / hd + r]; };
        float mx = stat(0).max;
        for (int64_t c = 1; c < seen; ++c) mx = std::max(mx, stat(c).max);
        float total = 0;
        for (int64_t c = 0; c < seen; ++c) total += std::exp(stat(c).max - mx) * stat(c).sum;
        float* out = sq.out + (t * s.n_heads + item.kvh * group + r % group) * hd;
        for (int64_t c = 0; c < seen; ++c) {
          const float weight = std::exp(stat(c).max - mx) * stat(c).sum / total;
          const float* part = &partials[item.partial + c * chunk_floats + r * hd];
          for (int64_t d = 0; d < hd; ++d) out[d] = c == 0 ? weight * part[d] : out[d] + weight * part[d];
        }
      }
    }
  });
}

void store_in_block(const void* k, const void* v, DType type, int64_t n, int64_t n_kv, int64_t hd, int64_t block_size,
                    int64_t at, void* block_keys, void* block_values) {
  const int64_t row = n_kv * hd;
  const size_t elem = dtype_size(type);
  auto keys = [&](const auto* src, auto* dst) {
    // 16 (head, dimension) pairs at a time: the source rows' lines are read
    // once, 16 destination rows are written index after index.
    for (int64_t e0 = 0; e0 < row; e0 += 16)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t e = e0; e < std::min(row, e0 + 16); ++e) dst[e * block_size + at + t] = src[t * row + e];
  };
  if (elem == 4)
    keys(static_cast<const uint32_t*>(k), static_cast<uint32_t*>(block_keys));
  else
    keys(static_cast<const uint16_t*>(k), static_cast<uint16_t*>(block_keys));
  for (int64_t h = 0; h < n_kv; ++h)
    for (int64_t t = 0; t < n; ++t)
      std::memcpy(static_cast<uint8_t*>(block_values) + static_cast<size_t>((h * block_size + at + t) * hd) * elem,
                  static_cast<const uint8_t*>(v) + static_cast<size_t>((t * n_kv + h) * hd) * elem,
                  static_cast<size_t>(hd) * elem);
}

void attention(const float* q, int64_t n, int64_t pos0, const void* k, const void* v, DType kv_type,
               const AttentionShape& s, float* out, ThreadPool& pool) {
  const int64_t len = pos0 + n;
  const size_t bytes = static_cast<size_t>(len * s.n_kv * s.hd) * dtype_size(kv_type);
  std::vector<uint8_t> block(2 * bytes);
  store_in_block(k, v, kv_type, len, s.n_kv, s.hd, len, 0, block.data(), block.data() + bytes);
  const int32_t table = 0;
  const AttentionSeq seq{q, out, n, pos0, {block.data(), block.data() + bytes, 0, &table, len, kv_type}};
  attention(std::span(&seq, 1), s, pool);
}

}  // namespace qinfer
