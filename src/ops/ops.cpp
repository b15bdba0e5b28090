#include "ops/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/simd.h"

namespace qinfer {

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

void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const int32_t* positions, const float* inv_freq) {
  const int64_t half = hd / 2;
  std::vector<float> cs(static_cast<size_t>(hd));
  for (int64_t t = 0; t < n; ++t) {
    // The angle is an f32 product, as transformers computes it; cos/sin of it are exact.
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];
      cs[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      cs[half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * hd;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half], c = cs[i], s = cs[half + i];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void attention(const float* q, int64_t n, int64_t pos0, const float* k, const float* v, const AttentionShape& s,
               float* out, ThreadPool& pool) {
  const int64_t group = s.n_heads / s.n_kv, hd = s.hd, kv_stride = s.n_kv * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const size_t tasks = static_cast<size_t>(n * s.n_kv);
  pool.parallel_for(tasks, 1, [&](size_t begin, size_t end) {
    thread_local std::vector<float> scores;
    for (size_t task = begin; task < end; ++task) {
      const int64_t t = static_cast<int64_t>(task) / s.n_kv, kvh = static_cast<int64_t>(task) % s.n_kv;
      const int64_t len = pos0 + t + 1;  // causal: keys 0 .. own position
      scores.resize(static_cast<size_t>(group * len));
      const float* qg = q + (t * s.n_heads + kvh * group) * hd;
      for (int64_t j = 0; j < len; ++j) {
        const float* kj = k + j * kv_stride + kvh * hd;
        for (int64_t g = 0; g < group; ++g) scores[g * len + j] = simd::dot(qg + g * hd, kj, hd) * scale;
      }
      float* og = out + (t * s.n_heads + kvh * group) * hd;
      std::fill(og, og + group * hd, 0.0f);
      for (int64_t g = 0; g < group; ++g) softmax(&scores[g * len], len);
      for (int64_t j = 0; j < len; ++j) {
        const float* vj = v + j * kv_stride + kvh * hd;
        for (int64_t g = 0; g < group; ++g) simd::axpy(scores[g * len + j], vj, og + g * hd, hd);
      }
    }
  });
}

}  // namespace qinfer
