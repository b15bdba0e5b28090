#include "ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "util/dtype.h"

namespace qinfer {

namespace {

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

void quantize_row_reference(QuantFormat f, const float* x, int64_t n, uint8_t* codes, uint16_t* scales) {
  const bool q8 = f == QuantFormat::Q8;
  const float lo = q8 ? -127.0f : -8.0f, hi = q8 ? 127.0f : 7.0f;
  const int zero = quant_zero_code(f);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float m = 0;  // the value of largest magnitude, with its sign
    for (int i = 0; i < kQuantBlock; ++i)
      if (std::fabs(xb[i]) > std::fabs(m)) m = xb[i];
    scales[b] = f32_to_f16(q8 ? std::fabs(m) / 127.0f : m / -8.0f);
    const float d = f16_to_f32(scales[b]);
    // q from the stored (rounded) scale, so d * q is the nearest representable value.
    const float inv = d != 0 ? 1.0f / d : 0.0f;
    // fmin/fmax, not std::clamp: a NaN (corrupt weights, refused by the caller
    // from the scale) must still become a code; converting it to int is undefined.
    for (int i = 0; i < kQuantBlock; ++i)
      codes[b * kQuantBlock + i] =
          static_cast<uint8_t>(static_cast<int>(std::fmax(lo, std::fmin(hi, std::nearbyint(xb[i] * inv)))) + zero);
  }
}

int64_t quantize_matrix(QuantFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out) {
  const int64_t blocks = n / kQuantBlock;
  int64_t first_bad_row = -1;
  // A group's rows quantized first, then its blocks written in order, each
  // once: whole cache lines of fresh memory rather than 4 bytes at a time.
  std::vector<uint8_t> codes(static_cast<size_t>(kQuantGroupRows * n));
  std::vector<uint16_t> scales(static_cast<size_t>(kQuantGroupRows * blocks));
  for (int64_t r0 = 0; r0 < rows; r0 += kQuantGroupRows) {
    for (int64_t j = 0; j < kQuantGroupRows; ++j) {
      if (r0 + j < rows) {
        if (!quantize_row(f, x + (r0 + j) * n, n, &codes[j * n], &scales[j * blocks]) && first_bad_row < 0)
          first_bad_row = r0 + j;
      } else {  // padding rows: zeros
        std::fill_n(&codes[j * n], n, static_cast<uint8_t>(quant_zero_code(f)));
        std::fill_n(&scales[j * blocks], blocks, uint16_t{0});
      }
    }
    uint8_t* block = out + group_offset(f, r0 / kQuantGroupRows, n);
    for (int64_t b = 0; b < blocks; ++b, block += quant_block_bytes(f)) {
      for (int64_t j = 0; j < kQuantGroupRows; ++j) std::memcpy(block + 2 * j, &scales[j * blocks + b], 2);
      uint8_t* chunk = block + 2 * kQuantGroupRows;
      for (int c = 0; c < (f == QuantFormat::Q8 ? 8 : 4); ++c)
        for (int64_t j = 0; j < kQuantGroupRows; ++j, chunk += 4) {
          const uint8_t* q = &codes[j * n + b * kQuantBlock];
          if (f == QuantFormat::Q8)
            std::memcpy(chunk, q + 4 * c, 4);
          else
            for (int i = 0; i < 4; ++i) chunk[i] = static_cast<uint8_t>(q[8 * c + i] | q[8 * c + 4 + i] << 4);
        }
    }
  }
  return first_bad_row;
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
