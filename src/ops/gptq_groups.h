// GPTQ weights as AutoGPTQ stores them (Qwen's -GPTQ-Int4/-Int8
// checkpoints): a Linear's weight transposed ([in, out]), its 4- or 8-bit
// codes packed into little-endian int32 along `in` (input 32/bits j + k in
// bits k x bits of word j), per group of inputs a zero code per output packed
// alike along `out` and stored minus one (AutoGPTQ's format "gptq"), and a
// scale per output. g_idx, where given, names each input's group (desc_act
// orders inputs by activation, so groups need not be contiguous).
//
// A weight is (code - (stored zero + 1)) x scale: a small integer times the
// scale, exact in f32, as AutoGPTQ's dequantization computes it before its
// float16 result rounds it.
#pragma once
#include <cstdint>

#include "util/dtype.h"

namespace qinfer {

struct GptqMatrix {
  const uint8_t* qweight;  // int32 [cols * bits / 32, rows]
  const uint8_t* qzeros;   // int32 [groups, rows * bits / 32]
  const void* scales;      // [groups, rows], of scale_type
  DType scale_type;
  const uint8_t* g_idx;       // int32 [cols], each in [0, groups); nullptr: input i is in group i / group
  int bits;                   // 4 or 8
  int64_t rows, cols, group;  // rows: outputs, cols: inputs
};

// Row `row` (one output) of the [rows, cols] weight, as f32.
void dequantize_gptq_row(const GptqMatrix& m, int64_t row, float* out);

}  // namespace qinfer
