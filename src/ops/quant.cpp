#include "ops/quant.h"

#include <algorithm>
#include <cmath>

#include "util/dtype.h"

namespace qinfer {

namespace {

void quantize_block_q8(const float* x, int8_t* q, uint16_t* scale) {
  float amax = 0;
  for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
  *scale = f32_to_f16(amax / 127.0f);
  const float d = f16_to_f32(*scale);
  // q from the stored (rounded) scale, so d * q is the nearest representable value.
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQuantBlock; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f));
}

// q4 codes (q + 8, in [0, 15]) of one block, and its scale.
void quantize_block_q4(const float* x, uint8_t* codes, uint16_t* scale) {
  float m = 0;  // the value of largest magnitude, with its sign
  for (int i = 0; i < kQuantBlock; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  *scale = f32_to_f16(m / -8.0f);
  const float d = f16_to_f32(*scale);
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQuantBlock; ++i)
    codes[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(x[i] * inv) + 8.0f, 0.0f, 15.0f));
}

}  // namespace

void quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* row) {
  const int64_t blocks = n / kQuantBlock;
  auto* scales = reinterpret_cast<uint16_t*>(row);
  row += quant_scale_bytes(n);
  if (f == QuantFormat::Q8) {
    for (int64_t b = 0; b < blocks; ++b)
      quantize_block_q8(x + b * kQuantBlock, reinterpret_cast<int8_t*>(row) + b * kQuantBlock, &scales[b]);
    return;
  }
  uint8_t even[kQuantBlock], odd[kQuantBlock];
  for (int64_t b = 0; b < blocks; b += 2) {
    quantize_block_q4(x + b * kQuantBlock, even, &scales[b]);
    if (b + 1 < blocks) quantize_block_q4(x + (b + 1) * kQuantBlock, odd, &scales[b + 1]);
    else std::fill(odd, odd + kQuantBlock, uint8_t{0});
    uint8_t* pair = row + b / 2 * kQuantBlock;
    for (int j = 0; j < kQuantBlock; ++j) pair[j] = static_cast<uint8_t>(even[j] | odd[j] << 4);
  }
}

void dequantize_row(QuantFormat f, const uint8_t* row, int64_t n, float* out) {
  const auto* scales = reinterpret_cast<const uint16_t*>(row);
  row += quant_scale_bytes(n);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float d = f16_to_f32(scales[b]);
    float* o = out + b * kQuantBlock;
    if (f == QuantFormat::Q8) {
      const int8_t* q = reinterpret_cast<const int8_t*>(row) + b * kQuantBlock;
      for (int i = 0; i < kQuantBlock; ++i) o[i] = d * q[i];
    } else {
      const uint8_t* pair = row + b / 2 * kQuantBlock;
      const int shift = b % 2 == 0 ? 0 : 4;
      for (int i = 0; i < kQuantBlock; ++i) o[i] = d * static_cast<float>(((pair[i] >> shift) & 15) - 8);
    }
  }
}

}  // namespace qinfer
