// Block-quantized weight formats. A row of n weights (n a multiple of 32) is
// cut into blocks of 32 consecutive weights; each block has one scale d, an
// IEEE half. A quantized row is its n/32 scales (little-endian halves)
// followed by its quants, so a matrix is one contiguous stream of rows, read
// front to back (the scales of a row before its quants):
//
//   Q8 (8.5 bits/weight): q = round(w / d) in [-127, 127], one int8 per weight,
//      d = max|w| / 127; w ~ d * q. Row: the scales, then n bytes of quants.
//   Q4 (4.5 bits/weight): q in [0, 15], w ~ d * (q - 8); d = m / -8 where m is
//      the block's value of largest magnitude (so m itself is exact). Row: the
//      scales, then the blocks in pairs, 32 bytes per pair: byte j holds q[j]
//      of the even block in its low nibble and q[j] of the odd block in its
//      high nibble (a row with an odd number of blocks ends with a half-used
//      pair, high nibbles zero). One 32-byte load and two masks give both
//      blocks' quants in order.
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

// Bytes of the scales of a row of n weights (where its quants start), of its
// quants, and of the whole row.
inline size_t quant_scale_bytes(int64_t n) { return static_cast<size_t>(n / kQuantBlock) * sizeof(uint16_t); }
inline size_t quant_bytes(QuantFormat f, int64_t n) {
  return static_cast<size_t>(f == QuantFormat::Q8 ? n : (n + 2 * kQuantBlock - 1) / (2 * kQuantBlock) * kQuantBlock);
}
inline size_t quant_row_bytes(QuantFormat f, int64_t n) { return quant_scale_bytes(n) + quant_bytes(f, n); }

// One row of n floats (n a multiple of kQuantBlock) into a quantized row.
void quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* row);
// The inverse: n floats d * q (Q8) or d * (q - 8) (Q4).
void dequantize_row(QuantFormat f, const uint8_t* row, int64_t n, float* out);

}  // namespace qinfer
