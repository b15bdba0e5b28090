// y = x · Wᵀ for a batch of activation rows: the one matmul of the engine.
// Prefill (many rows) runs a blocked GEMM: float weight panels are widened to
// f32 once per block and multiplied by a register-tiled micro-kernel. Decode
// (one row) streams each weight row once, widening inside the dot product,
// which is what makes it run at memory bandwidth. Arithmetic is f32, except
// Q8/Q4 weights, whose blocks are integer dot products with the activation
// quantized per 32-block (see quant.h), in prefill and decode alike. A row's
// result never depends on how many rows share the call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "ops/quant.h"
#include "util/dtype.h"
#include "util/thread_pool.h"

namespace qinfer {

enum class WeightFormat : uint8_t { F32, F16, BF16, Q8, Q4 };

const char* weight_format_name(WeightFormat f);

// A [rows, cols] weight matrix: rows = output features, cols = input
// features (the PyTorch nn.Linear layout). Float formats are rows of
// elements; Q8/Q4 quantized groups of 8 rows (quant.h).
struct WeightMatrix {
  WeightFormat format = WeightFormat::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  bool quantized() const { return format == WeightFormat::Q8 || format == WeightFormat::Q4; }
  QuantFormat quant_format() const { return format == WeightFormat::Q8 ? QuantFormat::Q8 : QuantFormat::Q4; }
  size_t row_bytes() const {
    switch (format) {
      case WeightFormat::F32:
        return static_cast<size_t>(cols) * 4;
      case WeightFormat::F16:
      case WeightFormat::BF16:
        return static_cast<size_t>(cols) * 2;
      case WeightFormat::Q8:
      case WeightFormat::Q4:
        break;
    }
    return quant_row_bytes(quant_format(), cols);
  }
  // Row r of a float matrix (Q8/Q4 store groups of 8 rows: quant.h).
  const uint8_t* row_ptr(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes();
  }
  size_t bytes() const {
    return quantized() ? quant_matrix_bytes(quant_format(), rows, cols) : static_cast<size_t>(rows) * row_bytes();
  }
};

// The float formats a checkpoint stores, as weight formats, and back.
WeightFormat weight_format_of(DType t);
DType float_dtype(WeightFormat f);

// y[n, w.rows] = x[n, w.cols] · Wᵀ, multi-threaded over output features.
void matmul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);

// Several matrices applied to the same x (q/k/v, gate/up) in one parallel
// section: x is prepared (packed or quantized) once and the threads share out
// the rows of all of them.
struct MatmulTarget {
  const WeightMatrix& w;
  float* y;  // [n, w.rows]
};
void matmul(const float* x, int64_t n, std::initializer_list<MatmulTarget> targets, ThreadPool& pool);

// Plain scalar version (double accumulation over the weights as stored,
// dequantized for Q8/Q4, and x as given) for tests.
void matmul_ref(const float* x, int64_t n, const WeightMatrix& w, float* y);

// Row r of w as f32 (embedding lookup; dequantized for Q8/Q4).
void widen_row(const WeightMatrix& w, int64_t r, float* out);

}  // namespace qinfer
