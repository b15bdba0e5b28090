#include "ops/matmul.h"

#include <algorithm>
#include <vector>

#include "ops/simd.h"

namespace qinfer {

namespace {
constexpr int64_t kRowBlock = 4;   // weight rows widened together (the micro-kernel's width)
constexpr int64_t kXChunk = 64;    // activation rows kept hot in cache while weights stream by
}  // namespace

void widen_row(const WeightMatrix& w, int64_t r, float* out) { simd::widen_f32(w.row_ptr(r), w.dtype, w.cols, out); }

void matmul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool) {
  const int64_t k = w.cols, m = w.rows;
  pool.parallel_for(static_cast<size_t>(m), kRowBlock * 4, [&](size_t begin, size_t end) {
    thread_local std::vector<float> wbuf;
    wbuf.resize(static_cast<size_t>(kRowBlock * k));
    for (int64_t x0 = 0; x0 < n; x0 += kXChunk) {
      const int64_t nx = std::min(kXChunk, n - x0);
      for (int64_t r = static_cast<int64_t>(begin); r < static_cast<int64_t>(end); r += kRowBlock) {
        const int64_t nr = std::min<int64_t>(kRowBlock, static_cast<int64_t>(end) - r);
        const float* wrows;
        if (w.dtype == DType::F32) {
          wrows = reinterpret_cast<const float*>(w.row_ptr(r));
        } else {
          simd::widen_f32(w.row_ptr(r), w.dtype, static_cast<size_t>(nr * k), wbuf.data());
          wrows = wbuf.data();
        }
        simd::dot_tile(x + x0 * k, nx, k, wrows, nr, k, k, y + x0 * m + r, m);
      }
    }
  });
}

void matmul_ref(const float* x, int64_t n, const WeightMatrix& w, float* y) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < w.rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s += static_cast<double>(x[i * w.cols + c]) * load_as_f32(w.row_ptr(r), w.dtype, c);
      y[i * w.rows + r] = static_cast<float>(s);
    }
}

}  // namespace qinfer
