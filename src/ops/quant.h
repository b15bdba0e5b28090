// Block-quantized weight formats. A row of `cols` weights is cut into blocks
// of 32 consecutive weights; each block has one scale d, stored as an IEEE
// half, in a separate [rows, cols/32] array (so the quants of a row stay
// contiguous and aligned for SIMD loads).
//
//   Q8 (8.5 bits/weight): q = round(w / d) in [-127, 127], one int8 per weight,
//      d = max|w| / 127; w ~ d * q.
//   Q4 (4.5 bits/weight): q in [0, 15], w ~ d * (q - 8); d = m / -8 where m is
//      the block's value of largest magnitude (so m itself is exact). Byte j
//      (0..15) of a block holds q[j] in its low nibble and q[j + 16] in its
//      high nibble.
//
// Error bounds (tested): Q8 |w - d q| <= |d|/2; Q4 <= |d|/2, except a value
// opposite in sign to m and close to |m| may be clamped from +8 to +7: <= |d|.
// (Plus the rounding of d to half precision, relative 2^-11.)
//
// Activations that multiply Q8/Q4 weights are quantized per row, with the same
// 32-wide blocks (int8 range, one f32 scale per block), so a block's dot
// product is exact integer arithmetic scaled by d_w * d_x.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer {

constexpr int64_t kQuantBlock = 32;

enum class QuantFormat : uint8_t { Q8, Q4 };

// Bytes of quants for a row of n weights (n a multiple of kQuantBlock).
inline size_t quant_row_bytes(QuantFormat f, int64_t n) {
  return static_cast<size_t>(f == QuantFormat::Q8 ? n : n / 2);
}

// One row of n floats (n a multiple of kQuantBlock) into quants and n/32 half scales.
void quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* quants, uint16_t* scales);
// The inverse: n floats d * q (Q8) or d * (q - 8) (Q4).
void dequantize_row(QuantFormat f, const uint8_t* quants, const uint16_t* scales, int64_t n, float* out);

}  // namespace qinfer
