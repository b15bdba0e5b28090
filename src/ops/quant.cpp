#include "ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/dtype.h"

namespace qinfer {

namespace {

// One block's codes (q + 128 for Q8, q + 8 for Q4) and its scale.
void quantize_block(QuantFormat f, const float* x, uint8_t* codes, uint16_t* scale) {
  float m = 0;  // the value of largest magnitude, with its sign
  for (int i = 0; i < kQuantBlock; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  const bool q8 = f == QuantFormat::Q8;
  *scale = f32_to_f16(q8 ? std::fabs(m) / 127.0f : m / -8.0f);
  const float d = f16_to_f32(*scale);
  // q from the stored (rounded) scale, so d * q is the nearest representable value.
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  const float lo = q8 ? -127.0f : -8.0f, hi = q8 ? 127.0f : 7.0f;
  const int zero = quant_zero_code(f);
  // fmin/fmax, not std::clamp: a NaN (corrupt weights, refused by the caller
  // from the scale) must still become a code; converting it to int is undefined.
  for (int i = 0; i < kQuantBlock; ++i)
    codes[i] = static_cast<uint8_t>(static_cast<int>(std::fmax(lo, std::fmin(hi, std::nearbyint(x[i] * inv)))) + zero);
}

// Byte offset of block b of a group within the group, and of group g within
// the matrix.
size_t block_offset(QuantFormat f, int64_t b) { return static_cast<size_t>(b) * quant_block_bytes(f); }
size_t group_offset(QuantFormat f, int64_t g, int64_t n) {
  return static_cast<size_t>(g) * static_cast<size_t>(n / kQuantBlock) * quant_block_bytes(f);
}
const uint8_t* block_of(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t b, int64_t n) {
  return matrix + group_offset(f, r / kQuantGroupRows, n) + block_offset(f, b);
}

}  // namespace

void quantize_matrix(QuantFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out) {
  const int64_t blocks = n / kQuantBlock;
  uint8_t codes[kQuantBlock];
  for (int64_t r = 0; r < quant_stored_rows(f, rows); ++r) {
    const int64_t j = r % kQuantGroupRows;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* block = out + group_offset(f, r / kQuantGroupRows, n) + block_offset(f, b);
      uint16_t scale = 0;
      if (r < rows)
        quantize_block(f, x + r * n + b * kQuantBlock, codes, &scale);
      else
        std::fill(codes, codes + kQuantBlock, static_cast<uint8_t>(quant_zero_code(f)));  // padding rows: zeros
      std::memcpy(block + 2 * j, &scale, 2);
      uint8_t* chunks = block + 2 * kQuantGroupRows + 4 * j;
      for (int c = 0; c < 8; ++c)
        for (int i = 0; i < 4; ++i) {
          if (f == QuantFormat::Q8)
            chunks[32 * c + i] = codes[4 * c + i];
          else if (c < 4)
            chunks[32 * c + i] = static_cast<uint8_t>(codes[8 * c + i] | codes[8 * c + 4 + i] << 4);
        }
    }
  }
}

uint16_t quant_block_scale(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t b, int64_t n) {
  uint16_t scale;
  std::memcpy(&scale, block_of(f, matrix, r, b, n) + 2 * (r % kQuantGroupRows), 2);
  return scale;
}

void dequantize_row(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t n, float* out) {
  const int zero = quant_zero_code(f);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float d = f16_to_f32(quant_block_scale(f, matrix, r, b, n));
    const uint8_t* chunks = block_of(f, matrix, r, b, n) + 2 * kQuantGroupRows + 4 * (r % kQuantGroupRows);
    float* o = out + b * kQuantBlock;
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i) {
        if (f == QuantFormat::Q8) {
          o[4 * c + i] = d * static_cast<float>(chunks[32 * c + i] - zero);
        } else if (c < 4) {
          const uint8_t byte = chunks[32 * c + i];
          o[8 * c + i] = d * static_cast<float>((byte & 15) - zero);
          o[8 * c + 4 + i] = d * static_cast<float>((byte >> 4) - zero);
        }
      }
  }
}

}  // namespace qinfer
