#include "ops/fp8_blocks.h"

#include <array>

namespace qinfer {

namespace {

// Every code's value: a lookup instead of decoding each weight's bits (a load
// widens billions of them).
const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v;
    for (int c = 0; c < 256; ++c) v[c] = f8e4m3_to_f32(static_cast<uint8_t>(c));
    return v;
  }();
  return values;
}

}  // namespace

void dequantize_fp8_row(const uint8_t* codes, int64_t row, int64_t cols, const Fp8BlockScales& scales, float* out) {
  const std::array<float, 256>& value = e4m3_values();
  const int64_t scale_cols = fp8_scale_columns(cols, scales), first_scale = row / scales.block_rows * scale_cols;
  const uint8_t* c = codes + row * cols;
  for (int64_t b = 0; b < scale_cols; ++b) {
    const float scale = load_as_f32(scales.data, scales.type, static_cast<size_t>(first_scale + b));
    const int64_t end = b + 1 == scale_cols ? cols : (b + 1) * scales.block_cols;
    for (int64_t i = b * scales.block_cols; i < end; ++i) out[i] = value[c[i]] * scale;
  }
}

}  // namespace qinfer
