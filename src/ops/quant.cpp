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

void quantize_block_q4(const float* x, uint8_t* q, uint16_t* scale) {
  float m = 0;  // the value of largest magnitude, with its sign
  for (int i = 0; i < kQuantBlock; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  *scale = f32_to_f16(m / -8.0f);
  const float d = f16_to_f32(*scale);
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  auto code = [&](float v) { return static_cast<uint8_t>(std::clamp(std::nearbyint(v * inv) + 8.0f, 0.0f, 15.0f)); };
  for (int j = 0; j < kQuantBlock / 2; ++j) q[j] = static_cast<uint8_t>(code(x[j]) | code(x[j + kQuantBlock / 2]) << 4);
}

}  // namespace

void quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* quants, uint16_t* scales) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    if (f == QuantFormat::Q8) quantize_block_q8(xb, reinterpret_cast<int8_t*>(quants) + b * kQuantBlock, &scales[b]);
    else quantize_block_q4(xb, quants + b * kQuantBlock / 2, &scales[b]);
  }
}

void dequantize_row(QuantFormat f, const uint8_t* quants, const uint16_t* scales, int64_t n, float* out) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float d = f16_to_f32(scales[b]);
    float* o = out + b * kQuantBlock;
    if (f == QuantFormat::Q8) {
      const int8_t* q = reinterpret_cast<const int8_t*>(quants) + b * kQuantBlock;
      for (int i = 0; i < kQuantBlock; ++i) o[i] = d * q[i];
    } else {
      const uint8_t* q = quants + b * kQuantBlock / 2;
      for (int j = 0; j < kQuantBlock / 2; ++j) {
        o[j] = d * static_cast<float>((q[j] & 15) - 8);
        o[j + kQuantBlock / 2] = d * static_cast<float>((q[j] >> 4) - 8);
      }
    }
  }
}

}  // namespace qinfer
