#include "ops/ops_ref.h"

#include <cmath>
#include <vector>

namespace qinfer::ref {

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = static_cast<float>(w[i] * (x[r * dim + i] * inv));
  }
}

void rope(float* x, int64_t n, int64_t n_heads, int64_t hd, const int32_t* positions, double theta) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * hd;
      std::vector<double> rotated(static_cast<size_t>(hd));
      for (int64_t i = 0; i < hd; ++i) {
        const int64_t f = i % half;  // emb = cat(freqs, freqs)
        const double angle = positions[t] * std::pow(theta, -2.0 * static_cast<double>(f) / static_cast<double>(hd));
        const double rot = i < half ? -v[i + half] : v[i - half];  // rotate_half
        rotated[i] = v[i] * std::cos(angle) + rot * std::sin(angle);
      }
      for (int64_t i = 0; i < hd; ++i) v[i] = static_cast<float>(rotated[i]);
    }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(gate[i] / (1.0 + std::exp(-static_cast<double>(gate[i]))) * up[i]);
}

void softmax(float* x, int64_t n) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::exp(x[i] - mx) / sum);
}

void attention(const float* q, int64_t n, int64_t pos0, const float* k, const float* v, int64_t n_heads, int64_t n_kv,
               int64_t hd, float* out) {
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < n_heads; ++h) {
      const int64_t kvh = h / (n_heads / n_kv), len = pos0 + t + 1;
      std::vector<double> p(static_cast<size_t>(len));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        double s = 0;
        for (int64_t i = 0; i < hd; ++i)
          s += static_cast<double>(q[(t * n_heads + h) * hd + i]) * k[(j * n_kv + kvh) * hd + i];
        p[j] = s / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, p[j]);
      }
      for (auto& e : p) sum += (e = std::exp(e - mx));
      for (int64_t i = 0; i < hd; ++i) {
        double o = 0;
        for (int64_t j = 0; j < len; ++j) o += p[j] / sum * v[(j * n_kv + kvh) * hd + i];
        out[(t * n_heads + h) * hd + i] = static_cast<float>(o);
      }
    }
}

}  // namespace qinfer::ref
