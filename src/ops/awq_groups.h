// AWQ 4-bit weights in AutoAWQ's GEMM layout, as Qwen publishes its -AWQ
// checkpoints: a Linear's weight transposed ([in, out]), its 4-bit codes packed
// 8 to a little-endian int32 along `out`, output k of each eight in nibble
// 0, 4, 1, 5, 2, 6, 3, 7 (AutoAWQ packs them in the order 0, 2, 4, 6, 1, 3,
// 5, 7); per group of `group` inputs, a zero code for each output (packed
// alike) and a scale for each output.
//
// A weight is (code - zero) x scale: an integer in [-15, 15] times the scale,
// exact in f32, which is what AutoAWQ's dequantization computes before its
// float16 result rounds it.
#pragma once
#include <cstdint>

#include "util/dtype.h"

namespace qinfer {

struct AwqMatrix {
  const uint8_t* qweight;  // int32 [cols, rows / 8]
  const uint8_t* qzeros;   // int32 [cols / group, rows / 8]
  const void* scales;      // [cols / group, rows], of scale_type
  DType scale_type;
  int64_t rows, cols, group;  // rows: outputs, cols: inputs
};

// Row `row` (one output) of the [rows, cols] weight, as f32.
void dequantize_awq_row(const AwqMatrix& m, int64_t row, float* out);

}  // namespace qinfer
