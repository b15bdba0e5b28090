// y = x · Wᵀ for a batch of activation rows: the one matmul of the engine.
// Prefill (many rows) and decode (one row per sequence) share it. Weights stay
// in their stored dtype and are widened to f32 inside the kernel; arithmetic
// is f32.
#pragma once
#include <cstddef>
#include <cstdint>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace qinfer {

// A row-major [rows, cols] weight matrix as stored: rows = output features,
// cols = input features (the PyTorch nn.Linear layout).
struct WeightMatrix {
  DType dtype = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  const uint8_t* row_ptr(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * cols * dtype_size(dtype);
  }
};

// y[n, w.rows] = x[n, w.cols] · Wᵀ, multi-threaded over output features.
void matmul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);

// Plain scalar version (double accumulation) for tests.
void matmul_ref(const float* x, int64_t n, const WeightMatrix& w, float* y);

// Row r of w widened to f32 (embedding lookup).
void widen_row(const WeightMatrix& w, int64_t r, float* out);

}  // namespace qinfer
