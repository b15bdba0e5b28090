// FP8 weights with block scales, as Qwen publishes its -FP8 checkpoints
// (transformers' fine-grained FP8, quant_method "fp8"): a matrix of E4M3 codes
// and, per block of block_rows x block_cols weights, one scale
// (weight_scale_inv: the factor the codes are multiplied by). Blocks at the
// right and bottom edges may be partial.
//
// A weight is float(code) * float(scale), one f32 multiplication: what
// transformers computes when it dequantizes such a checkpoint (on a CPU it
// always does, then casts to the model's dtype).
#pragma once
#include <cstdint>

#include "util/dtype.h"

namespace qinfer {

struct Fp8BlockScales {
  const void* data;  // [ceil(rows / block_rows), ceil(cols / block_cols)]
  DType type;        // F32, BF16 or F16
  int64_t block_rows, block_cols;
};

inline int64_t fp8_scale_columns(int64_t cols, const Fp8BlockScales& s) {
  return (cols + s.block_cols - 1) / s.block_cols;
}

// Row `row` of a [rows, cols] FP8 matrix whose codes start at `codes`, as f32.
void dequantize_fp8_row(const uint8_t* codes, int64_t row, int64_t cols, const Fp8BlockScales& scales, float* out);

}  // namespace qinfer
