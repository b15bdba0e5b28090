// The per-target SIMD kernels behind matmul() (Highway, with run-time
// dispatch): float_matmul_kernels.cpp for float weights, matmul_kernels.cpp
// for Q8/Q4 weights and attention. matmul.cpp drives them: it prepares the
// activation rows once, then shares out groups of weight rows among the
// threads. Exposed for the tests and micro-benchmarks.
//
// Float weights: each output is float_dot (matmul.h), over the weights'
// panels with the weight rows in the vector lanes, whatever the number of
// activation rows. The Q8/Q4 kernels take one or
// two groups of 8 interleaved weight rows (quant.h) with the rows in the
// lanes, and the activation quantized to int8 per 32-block, in decode and
// prefill alike; a row's result is a fixed sequence of exact block integer
// dot products, conversions, scalings and FMAs. So decode and prefill give
// bit-identical results in every format.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/matmul.h"
#include "ops/ops.h"

namespace qinfer::kernels {

// Activation rows [n, k] in the forms the weight formats need.
struct Activations {
  const float* x = nullptr;         // [n, k]: float weights, one row
  const float* packed = nullptr;    // x in tiles for float weights, n > 1 (pack_activation)
  const uint32_t* pairs = nullptr;  // x in tiles of bf16 pairs for bf16-product weights (pack_bf16_pairs)
  // Q8, Q4 weights: x quantized per 32-block, in tiles of quant_tile_rows()
  // rows (quantize_activation; one row is a tile of its own). q: the int8
  // values; d: each block's scale; zero_dot, per format (QuantFormat as
  // index): each block's dot product with the weights' zero code,
  // -(zero code) * sum(q), which turns the integer dot with the stored codes
  // into the dot with the signed weights.
  const int8_t* q = nullptr;  // n * k
  const float* d = nullptr;   // n * k / 32 (as zero_dot)
  const int32_t* zero_dot[2] = {nullptr, nullptr};
  // Q8, Q4 weights through the AMX tiles (amx_prefill): q and d in tiles of
  // one row, i.e. row-major, padded with zero rows to a multiple of
  // kAmxTileRows.
  bool amx = false;
};

// Rows [i0, i1) (i0 a multiple of tile_rows) of x [n, k] quantized per
// 32-block: q = round(x / d) in [-127, 127], d = max|x| / 127, and each
// block's zero_dot for Q8 and Q4; into tiles of tile_rows rows
// (quant_tile_rows(), or 1 for the AMX tiles), the tile from row t at
// q + t * k, d + t * k / 32 and zero_dot + t * k / 32.
void quantize_activation(const float* x, size_t n, size_t k, size_t i0, size_t i1, size_t tile_rows, int8_t* q,
                         float* d, int32_t* zero_dot_q8, int32_t* zero_dot_q4);
// Activation rows per Q8/Q4 tile of the vector kernels.
size_t quant_tile_rows();

// ---- AMX-INT8 (Intel Xeon since Sapphire Rapids): Q8/Q4 matmuls of more than
// kStreamedRows activation rows through int8 tiles, in amx_kernels.cpp. Each
// block's integer dot products come from tdpbssd (exact, as vpdpbusd's), then
// the same conversion, scaling and FMA per output as the vector kernels, so
// the results are theirs bit for bit.
constexpr size_t kAmxTileRows = 16;  // activation rows per tile
// Whether Q8/Q4 prefill uses the AMX tiles: the CPU and OS have AMX-INT8, the
// Linux kernel granted this process the tile state (asked once), no --simd
// limit is set, and QINFER_AMX=1 is set: an opt-in until the tiles are
// measured on an AMX host (their tests run under an emulator elsewhere).
bool amx_prefill();
// Why amx_prefill() is false ("" when it is true), for --version and bench.
const char* amx_status();
// Turns the AMX tiles off (limit_target below AVX3_DL) or back on where
// amx_prefill() allows them.
void use_amx(bool on);
// Tests only: the AMX tiles on even where the CPU lacks them, whose
// instructions an emulator then runs (tests/ops/amx_emulator.h).
void force_amx_for_tests(bool on);
// dot_rows for Q8/Q4 weights and an activation quantized for the tiles
// (Activations::amx): i0 a multiple of kAmxTileRows, r0 of 8.
void amx_quant_dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1,
                        float* y, size_t ldy);

// How the Q8/Q4 kernels compute their integer dot products on this CPU.
const char* int8_dot_path();

// Q8/Q4 with at most this many activation rows (decode, a batched decode
// step) stream the weights: the caller gives each thread long runs of weight
// rows, each tile of weights read from memory once for all the rows.
constexpr size_t kStreamedRows = 64;

// y[i * ldy + (r - r0)] = dot(activation row i0 + i, weight row r), for i < ni
// and r in [r0, r1); i0 a tile's first row. Q8/Q4: r0 a multiple of 8.
// Float weights: panels (matmul.h), r0 a multiple of kFloatPanelRows; with
// ni > 1, a.packed holds the activation rows from i0.
void dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
              size_t ldy);
// dot_rows for float weights.
void float_dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
                    size_t ldy);

// Rows [i0, i1) (i0 a multiple of float_tile_rows()) of x [n, k] packed for
// float weights: tiles of float_tile_rows() rows (the last of n may be
// shorter), each [k][rows], at out + (tile's first row) * k.
void pack_activation(const float* x, size_t n, size_t k, size_t i0, size_t i1, float* out);
// The same for bf16-product weights (WeightMatrix::bf16_products): each row's
// columns 2m, 2m+1 rounded by bf16_operand into one 32-bit pair (2m in the
// low half), tiles [k/2][rows] at out + (tile's first row) * k / 2; one row
// is a tile of its own.
void pack_bf16_pairs(const float* x, size_t n, size_t k, size_t i0, size_t i1, uint32_t* out);
// How the bf16-product kernels multiply on this CPU: vdpbf16ps where the
// target is AVX-512 and the CPU has AVX512-BF16, else two multiply-adds.
const char* bf16_product_path();
// One whole panel of float weights (matmul.h): kFloatPanelRows rows of `cols`
// elements of element_bytes (2 or 4), `stride` elements apart from `rows`,
// into dst [cols][kFloatPanelRows]. pack_float_panels' fast path; its plain
// loop is the reference the tests hold it to.
void pack_full_panel(const void* rows, size_t element_bytes, size_t stride, size_t cols, void* dst);
// Activation rows per float tile.
size_t float_tile_rows();
// Whether this target's float kernels fuse their multiply-adds (all but
// SSSE3/SSE4 and the emulated targets): then they give float_dot's bits.
bool fused_float_dot();

// Rows [r0, r1) of w as f32 (all formats), into out[(r - r0) * w.cols + c].
void widen_rows(const WeightMatrix& w, size_t r0, size_t r1, float* out);

// ---- Attention. Keys and values are in a KV cache's blocks (F32, F16 or BF16;
// KvBlocks in ops.h).

// s[i * lds + (p - p0)] = dot(q row i, key of position p) for i < nq and p in
// [p0, p1): the keys of kv head `head` (hd dimensions) in kv's transposed
// blocks, consecutive keys in the vector lanes. Each score is one multiply-add
// chain over dimensions 0 .. hd-1 in order, fused where the target has FMA: it
// depends on neither the rows nor the keys computed alongside, nor on the
// blocks the keys are stored in.
void attention_scores(const float* q, size_t nq, size_t ldq, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* s, size_t lds);
// o[i * ldo + c] = the sum over positions p in [p0, p1), in order, of
// s[i * lds + (p - p0)] times column c of p's value, for i < np and c < hd:
// the values of kv head `head` in kv's blocks. Each output is one
// multiply-add chain over the positions, whatever the blocks.
void attention_values(const float* s, size_t np, size_t lds, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* o, size_t ldo);

}  // namespace qinfer::kernels
