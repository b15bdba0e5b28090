// Block-quantized weight formats. A row of n weights (n a multiple of 32) is
// cut into blocks of 32 consecutive weights; each block has one scale d, an
// IEEE half (little-endian).
//
//   Q8 (8.5 bits/weight): q = round(w / d) in [-127, 127], one int8 per weight,
//      d = max|w| / 127; w ~ d * q. A matrix is its rows one after another;
//      a row is its n/32 scales, then n bytes of quants (read front to back).
//   Q4 (4.5 bits/weight): q in [0, 15], w ~ d * (q - 8); d = m / -8 where m is
//      the block's value of largest magnitude (so m itself is exact). Rows are
//      stored in groups of 8 (the last group padded with zero rows), and a
//      group is its blocks one after another, 144 bytes each: the 8 rows'
//      scales (16 bytes), then 4 chunks of 32 bytes; in chunk c, row r's 4
//      bytes at 4r hold q[8c + i] in the low nibble and q[8c + 4 + i] in the
//      high nibble of byte i. So one 32-byte load gives 8 codes of each of 8
//      rows, and a decode kernel's vector lanes are rows: the int->float
//      conversion, the scale and the FMA of a block serve 8 rows at once.
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

constexpr int64_t kQ4GroupRows = 8;
constexpr size_t kQ4BlockBytes = 144;  // 8 scales + 8 rows x 16 bytes of codes

// Q8: bytes of the scales of a row of n weights (where its quants start) and
// of the whole row. Q4: the bytes per row (n/32 blocks of 18 bytes).
inline size_t quant_scale_bytes(int64_t n) { return static_cast<size_t>(n / kQuantBlock) * sizeof(uint16_t); }
inline size_t quant_row_bytes(QuantFormat f, int64_t n) {
  return quant_scale_bytes(n) + static_cast<size_t>(f == QuantFormat::Q8 ? n : n / 2);
}
// Rows as stored: Q4 pads the last group of 8.
inline int64_t quant_stored_rows(QuantFormat f, int64_t rows) {
  return f == QuantFormat::Q8 ? rows : (rows + kQ4GroupRows - 1) / kQ4GroupRows * kQ4GroupRows;
}
// Bytes of a quantized [rows, n] matrix, and where row r (Q4: a multiple of
// 8) starts in it.
inline size_t quant_matrix_bytes(QuantFormat f, int64_t rows, int64_t n) {
  return static_cast<size_t>(quant_stored_rows(f, rows)) * quant_row_bytes(f, n);
}

// Rows [0, rows) of x ([rows, n] floats, n a multiple of kQuantBlock) into a
// quantized matrix of quant_matrix_bytes(f, rows, n) bytes.
void quantize_matrix(QuantFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out);
// Row r of a quantized [*, n] matrix: n floats d * q (Q8) or d * (q - 8) (Q4).
void dequantize_row(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t n, float* out);
// The half-precision scale of block b of row r.
uint16_t quant_block_scale(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t b, int64_t n);

}  // namespace qinfer
