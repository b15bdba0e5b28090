// Block-quantized weight formats. A row of n weights (n a multiple of 32) is
// cut into blocks of 32 consecutive weights; each block has one scale d, an
// IEEE half (little-endian), and one integer code per weight.
//
//   Q8 (8.5 bits/weight): q = round(w / d) in [-127, 127], d = max|w| / 127;
//      w ~ d * q; stored as the unsigned code q + 128.
//   Q4 (4.5 bits/weight): q in [-8, 7], d = m / -8 where m is the block's
//      value of largest magnitude (so m itself is exact); w ~ d * q; stored as
//      the 4-bit code q + 8.
//
// Both store rows in groups of 8 (the last group padded with zero rows), and
// a group is its blocks one after another: the 8 rows' scales (16 bytes),
// then the codes in chunks of 32 bytes, row r's 4 bytes at 4r of each chunk:
//   Q8: 8 chunks (272-byte blocks); chunk c holds codes 4c..4c+3 of each row.
//   Q4: 4 chunks (144-byte blocks); chunk c holds codes 8c..8c+3 in the low
//       nibbles and 8c+4..8c+7 in the high nibbles.
// So one 32-byte load gives 4 (Q8) or 8 (Q4) codes of each of 8 rows, and the
// kernels' vector lanes are rows: a 4-byte dot product per lane (vpdpbusd,
// vpmaddubsw), and the conversion, scale and FMA of a block serve 8 rows (16
// with 512-bit vectors, two groups side by side) at once.
//
// Error bounds (tested): Q8 |w - d q| <= |d|/2; Q4 <= |d|/2, except a value
// opposite in sign to m and close to |m| may be clamped from +8 to +7: <= |d|.
// (Plus the rounding of d to half precision, relative 2^-11.)
//
// Activations that multiply Q8/Q4 weights are quantized per row, with the same
// 32-wide blocks (int8 range, one f32 scale per block), so a block's dot
// product is exact integer arithmetic scaled by d_w * d_x, in prefill and
// decode alike.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer {

constexpr int64_t kQuantBlock = 32;

enum class QuantFormat : uint8_t { Q8, Q4 };

constexpr int64_t kQuantGroupRows = 8;
constexpr size_t kQ8BlockBytes = 272;  // 8 scales + 8 rows x 32 codes
constexpr size_t kQ4BlockBytes = 144;  // 8 scales + 8 rows x 16 bytes of codes
inline size_t quant_block_bytes(QuantFormat f) { return f == QuantFormat::Q8 ? kQ8BlockBytes : kQ4BlockBytes; }
// The code of a zero weight (Q8: q + 128, Q4: q + 8).
inline int quant_zero_code(QuantFormat f) { return f == QuantFormat::Q8 ? 128 : 8; }

// Bytes per row of n weights (n/32 blocks of 34 or 18 bytes, scale included).
inline size_t quant_row_bytes(QuantFormat f, int64_t n) {
  return static_cast<size_t>(n / kQuantBlock) * (quant_block_bytes(f) / kQuantGroupRows);
}
// Rows as stored: the last group of 8 padded.
inline int64_t quant_stored_rows(QuantFormat, int64_t rows) {
  return (rows + kQuantGroupRows - 1) / kQuantGroupRows * kQuantGroupRows;
}
// Bytes of a quantized [rows, n] matrix, and where row r (a multiple of 8)
// starts in it.
inline size_t quant_matrix_bytes(QuantFormat f, int64_t rows, int64_t n) {
  return static_cast<size_t>(quant_stored_rows(f, rows)) * quant_row_bytes(f, n);
}

// Row x of n weights (n a multiple of kQuantBlock) as its codes (q + the zero
// code, n bytes) and its blocks' half scales (n / 32): the definition above,
// one weight at a time.
void quantize_row_reference(QuantFormat f, const float* x, int64_t n, uint8_t* codes, uint16_t* scales);
// The same, vectorized (quant_kernels.cpp): the reference's bytes on every
// target, for every input. Returns whether every weight was finite: a NaN or
// infinity still gets a code, but the block's scale ignores it, so corrupt
// weights would look sound.
bool quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* codes, uint16_t* scales);
// Rows [0, rows) of x ([rows, n] floats, n a multiple of kQuantBlock) into a
// quantized matrix of quant_matrix_bytes(f, rows, n) bytes. Returns the first
// row holding a NaN or infinity, or -1.
int64_t quantize_matrix(QuantFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out);
// Row r of a quantized [*, n] matrix: n floats d * q.
void dequantize_row(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t n, float* out);
// The half-precision scale of block b of row r.
uint16_t quant_block_scale(QuantFormat f, const uint8_t* matrix, int64_t r, int64_t b, int64_t n);

}  // namespace qinfer
