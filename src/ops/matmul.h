// y = x · Wᵀ for a batch of activation rows: the one matmul of the engine.
// Float weights: every output is float_dot below, computed over the weights'
// panels (the rows side by side, packed once at load) with the weight rows in
// the vector lanes: decode streams each panel once at memory bandwidth,
// prefill widens it to f32 once and runs a register-tiled micro-kernel over
// it. Q8/Q4 weights: blocks of integer dot products with the activation
// quantized per 32-block (see quant.h), in prefill and decode alike. A row's
// result never depends on how many rows share the call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>

#include "ops/quant.h"
#include "util/dtype.h"
#include "util/thread_pool.h"

namespace qinfer {

enum class WeightFormat : uint8_t { F32, F16, BF16, Q8, Q4 };

const char* weight_format_name(WeightFormat f);

// A [rows, cols] weight matrix: rows = output features, cols = input
// features (the PyTorch nn.Linear layout). Float formats are rows of
// elements as a checkpoint stores them, or panels (pack_float_panels), the
// layout matmul takes; Q8/Q4 are quantized groups of 8 rows (quant.h).
struct WeightMatrix {
  WeightFormat format = WeightFormat::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  bool panels = false;  // float formats: packed by pack_float_panels
  // BF16 panels only, opt in (--fast-prefill): each output is bf16_pair_dot
  // below instead of float_dot, in prefill and decode alike.
  bool bf16_products = false;

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
  // Row r of a float matrix in rows layout (Q8/Q4 store groups of 8 rows: quant.h).
  const uint8_t* row_ptr(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes();
  }
  size_t bytes() const;
};

// Float weights as matmul takes them: the rows in panels of kFloatPanelRows,
// each stored [cols][kFloatPanelRows] (the panel's rows side by side at every
// column) in the matrix's float format, the last panel padded with zero rows.
// So weight rows sit in the vector lanes, and decode reads a matrix as one
// sequential stream. A checkpoint's rows are packed once, at load.
constexpr int64_t kFloatPanelRows = 32;
size_t float_panel_bytes(WeightFormat f, int64_t rows, int64_t cols);
// w (float, rows layout) packed into out (float_panel_bytes bytes); the
// result views out.
WeightMatrix pack_float_panels(const WeightMatrix& w, void* out, ThreadPool& pool);
// Row r of a float matrix in its own format (either layout): row_bytes() bytes.
void copy_float_row(const WeightMatrix& w, int64_t r, void* out);

// The float formats a checkpoint stores, as weight formats, and back.
WeightFormat weight_format_of(DType t);
DType float_dtype(WeightFormat f);

// y[n, w.rows] = x[n, w.cols] · Wᵀ, multi-threaded over output features.
// Float weights must be panels.
void matmul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);

// Several matrices applied to the same x (q/k/v, gate/up) in one parallel
// section: x is prepared (packed or quantized) once and the threads share out
// the rows of all of them.
struct MatmulTarget {
  const WeightMatrix& w;
  float* y;  // [n, w.rows]
};
void matmul(const float* x, int64_t n, std::initializer_list<MatmulTarget> targets, ThreadPool& pool);

// Several inputs, each with its own matrices (a mixture's experts, each over
// the rows routed to it), in one parallel section: one call's start and end
// instead of one per matrix, which is most of the cost when the matrices are
// small and the rows few. Each output row is the bits matmul gives it.
struct MatmulInput {
  const float* x;  // [n, cols of the targets]
  int64_t n;
  std::span<const MatmulTarget> targets;
};
void matmul_each(std::span<const MatmulInput> inputs, ThreadPool& pool);

// The sum a float weight row gives, by definition: k cut into blocks of
// kFloatDotBlock, each block one chain of fused multiply-adds in k order from
// zero, the block sums added in order. (A chain per output lets a kernel keep
// weight rows in the vector lanes; the blocks keep the rounding error of a
// 1024-3072 term sum at that of a 16-lane split.) The kernels give exactly
// this where their target fuses multiply-adds (kernels::fused_float_dot).
constexpr size_t kFloatDotBlock = 16;
float float_dot(const float* x, const void* w_row, DType t, size_t k);

// The opt-in sum of bf16 weights (WeightMatrix::bf16_products): x rounded to
// bf16 (bf16_operand), then, as AVX512-BF16's vdpbf16ps adds a pair of
// products, for each pair of columns (2m, 2m+1): s += x[2m+1] * w[2m+1], then
// s += x[2m] * w[2m], each sum rounded once (a product of two bf16 is exact in
// f32); subnormal weights count as zero and every subnormal sum becomes zero
// (the instruction's rules); blocks as float_dot's. So every x86 target that
// lacks the instruction gives its bits with two multiply-adds per pair under
// flush-to-zero. k even.
float bf16_pair_dot(const float* x, const void* w_row_bf16, size_t k);
// x rounded to bf16 to nearest even, subnormals to zero (vdpbf16ps reads its
// operands so; a NaN stays a NaN).
inline uint16_t bf16_operand(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);  // zero, subnormal
  return f32_to_bf16(x);
}

// Plain scalar version (double accumulation over the weights as stored,
// dequantized for Q8/Q4, and x as given; either float layout) for tests.
void matmul_ref(const float* x, int64_t n, const WeightMatrix& w, float* y);

// Row r of w as f32 (embedding lookup; dequantized for Q8/Q4; either float layout).
void widen_row(const WeightMatrix& w, int64_t r, float* out);

}  // namespace qinfer
