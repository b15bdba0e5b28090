#include "ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

// Byte offset of block b of a Q4 group within the group, of the code chunks,
// and of a group within the matrix.
size_t q4_block_offset(int64_t b) { return static_cast<size_t>(b) * kQ4BlockBytes; }
size_t q4_group_offset(int64_t g, int64_t n) { return static_cast<size_t>(g) * (n / kQuantBlock) * kQ4BlockBytes; }

}  // namespace

void quantize_matrix(QuantFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out) {
  const int64_t blocks = n / kQuantBlock;
  if (f == QuantFormat::Q8) {
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* row = out + static_cast<size_t>(r) * quant_row_bytes(f, n);
      auto* scales = reinterpret_cast<uint16_t*>(row);
      auto* quants = reinterpret_cast<int8_t*>(row + quant_scale_bytes(n));
      for (int64_t b = 0; b < blocks; ++b)
        quantize_block_q8(x + r * n + b * kQuantBlock, quants + b * kQuantBlock, &scales[b]);
    }
    return;
  }
  const int64_t stored = quant_stored_rows(f, rows);
  uint8_t codes[kQuantBlock];
  for (int64_t r = 0; r < stored; ++r) {
    uint8_t* group = out + q4_group_offset(r / kQ4GroupRows, n);
    const int64_t j = r % kQ4GroupRows;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* block = group + q4_block_offset(b);
      uint16_t scale = 0;
      if (r < rows) quantize_block_q4(x + r * n + b * kQuantBlock, codes, &scale);
      else std::fill(codes, codes + kQuantBlock, uint8_t{8});  // padding rows: zeros
      std::memcpy(block + 2 * j, &scale, 2);
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 4; ++i)
          block[16 + 32 * c + 4 * j + i] = static_cast<uint8_t>(codes[8 * c + i] | codes[8 * c + 4 + i] << 4);
    }
  }
}

uint16_t quant_block_scale(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t b, int64_t n) {
  uint16_t scale;
  if (f == QuantFormat::Q8)
    std::memcpy(&scale, matrix + static_cast<size_t>(r) * quant_row_bytes(f, n) + 2 * b, 2);
  else
    std::memcpy(&scale, matrix + q4_group_offset(r / kQ4GroupRows, n) + q4_block_offset(b) + 2 * (r % kQ4GroupRows),
                2);
  return scale;
}

void dequantize_row(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t n, float* out) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float d = f16_to_f32(quant_block_scale(f, matrix, r, b, n));
    float* o = out + b * kQuantBlock;
    if (f == QuantFormat::Q8) {
      const auto* q = reinterpret_cast<const int8_t*>(matrix + static_cast<size_t>(r) * quant_row_bytes(f, n) +
                                                      quant_scale_bytes(n)) + b * kQuantBlock;
      for (int i = 0; i < kQuantBlock; ++i) o[i] = d * q[i];
    } else {
      const uint8_t* chunks = matrix + q4_group_offset(r / kQ4GroupRows, n) + q4_block_offset(b) + 16 +
                              4 * (r % kQ4GroupRows);
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 4; ++i) {
          const uint8_t byte = chunks[32 * c + i];
          o[8 * c + i] = d * static_cast<float>((byte & 15) - 8);
          o[8 * c + 4 + i] = d * static_cast<float>((byte >> 4) - 8);
        }
    }
  }
}

}  // namespace qinfer
