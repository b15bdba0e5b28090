// Highway kernels with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/keep_in_register-inl.h"
#include "ops/matmul_kernels.h"
#include "ops/simd.h"
#include "ops/with_rows.h"

HWY_BEFORE_NAMESPACE();
namespace qinfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
// Integer dot products: at most 16 int16 lanes per vector, so a 32-weight block
// is a whole number of vectors on every target.
using D16 = hn::CappedTag<int16_t, 16>;
using D32 = hn::Repartition<int32_t, D16>;
using DF32 = hn::Repartition<float, D16>;

// Q8/Q4 decode streams weights from memory: software prefetch this far ahead
// of the loads (measured best among 2-12 KiB on the 2-core AVX2 machine: ~10%
// more bandwidth than the hardware prefetchers alone).
[[maybe_unused]] constexpr size_t kPrefetchBytes = 12288;  // the portable tile does not prefetch

// Keys and values differ only in how a vector is loaded (widened in registers).
struct F32Rows {
  using T = float;
  static constexpr DType kType = DType::F32;
  static HWY_INLINE hn::Vec<DF> Load(DF df, const float* p) { return hn::LoadU(df, p); }
};
struct F16Rows {
  using T = hwy::float16_t;
  static constexpr DType kType = DType::F16;
  static HWY_INLINE hn::Vec<DF> Load(DF df, const hwy::float16_t* p) {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), p));
  }
};

struct BF16Rows {
  using T = hwy::bfloat16_t;
  static constexpr DType kType = DType::BF16;
  static HWY_INLINE hn::Vec<DF> Load(DF df, const hwy::bfloat16_t* p) {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DF>(), p));
  }
};

// ---------------------------------------------------------------- quantized

// Quantized weights (quant.h) times int8 activation rows, rows of a group in
// the vector lanes. For activation row i and weight row j the arithmetic is
// fixed, whatever the target, the tile and the number of rows in the call:
//   acc = 0; for each block b in order:
//     acc = fma(float(exact integer dot of the block), f16 scale * d_x[b], acc)
// The integer dot may be computed any exact way (its magnitude stays below
// 2^24, so its conversion and the zero-point correction are exact), so
// prefill and decode give the same bits on every target and every row count.
struct GroupArgs {
  QuantFormat format;
  const uint8_t* g0;  // first group of 8 weight rows
  const uint8_t* g1;  // the next group (== g0 when there is only one)
  size_t blocks;
  const Activations* a;
  size_t i0, k;  // first activation row, row length
  float* y;
  size_t ldy, nr;  // y[i * ldy + j] for j < nr
  bool prefetch;   // the weights come from memory: fetch ahead of the stream
};

// The quantized activation of the tile of R rows from row i0 (Activations:
// tiles of kQuantTileRows rows, the last maybe shorter). Each block of the
// tile is its rows' 4-byte chunks c = 0..7, c-major: row i's chunk c at
// q + block * 32 * R + 4 * (c * R + i). d and zero_dot are [block][row]. So
// one pointer with constant offsets reaches every operand of a block.
struct QuantTile {
  const int8_t* q;
  const float* d;
  const int32_t* zero_dot;
};
inline QuantTile quant_tile(const Activations& a, QuantFormat f, size_t i0, size_t k) {
  const size_t blocks = k / kQuantBlock;
  return {a.q + i0 * k, a.d + i0 * blocks, a.zero_dot[static_cast<int>(f)] + i0 * blocks};
}

#if HWY_TARGET == HWY_AVX3_DL
// AVX-512 VNNI: 16 lanes, two groups side by side; vpdpbusd multiplies the
// unsigned codes by the signed activation bytes, 4 per lane, into int32
// without saturation. The codes carry the zero point: each dot starts from
// the activation's zero_dot (-zero code * sum(x)), so it ends as the exact
// dot with the signed weights.
constexpr size_t kGroupsPerTile = 2;
constexpr size_t kQuantTileRows = 12;
// Highway 1.0.3 selects AVX3_DL only on CPUs with AVX512-VNNI but does not
// let the compiler emit it (its target string names AVX-VNNI instead). The
// whole AVX-512 set is named: clang replaces Highway's pragma target with a
// function's own target attribute instead of adding to it.
#define QINFER_VNNI __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni")))

HWY_INLINE QINFER_VNNI __m512i Join(const uint8_t* lo, const uint8_t* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)), 1);
}

// isum[i] += the dot of w's lanes with activation row i's 4-byte chunk at
// xc + 4 i, broadcast. (A function, not a lambda: clang does not give a
// lambda its enclosing function's target attribute.)
template <size_t R>
HWY_INLINE QINFER_VNNI void ChunkDots(__m512i (&isum)[R], __m512i w, const int8_t* xc) {
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i) {
    int32_t x4;
    std::memcpy(&x4, xc + 4 * i, 4);
    isum[i] = _mm512_dpbusd_epi32(isum[i], w, _mm512_set1_epi32(x4));
  }
}

template <size_t R, QuantFormat F>
HWY_NOINLINE QINFER_VNNI void GroupTile(const GroupArgs& t) {
  const size_t BB = quant_block_bytes(F);
  const __m512i low = _mm512_set1_epi8(15);
  __m512 acc[R];
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  const QuantTile x = quant_tile(*t.a, F, t.i0, t.k);
  for (size_t b = 0; b < t.blocks; ++b) {
    const uint8_t* p0 = t.g0 + b * BB;
    const uint8_t* p1 = t.g1 + b * BB;
    // Into L2 only (prefetcht1): this tile reads two streams at once, and
    // fetching 12 KiB ahead of both into L1 evicted what the tile was about
    // to use (BM_Decode/q8/2 on Zen 4: ~29-35 GB/s against ~22-25 with
    // prefetcht0; q4 ~37-43 against ~17-21).
    if (t.prefetch)
      for (size_t line = 0; line < BB; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(p0 + line + kPrefetchBytes), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(p1 + line + kPrefetchBytes), _MM_HINT_T1);
      }
    const __m512 scales = _mm512_cvtph_ps(
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)), 1));
    // The integer dots of all rows advance together: R independent chains
    // hide vpdpbusd's latency. Each weight vector (codes 4c..4c+3 of every
    // row) is loaded when its turn comes, so the registers go to the rows.
    const int8_t* xb = x.q + b * kQuantBlock * R;
    __m512i isum[R];
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i) isum[i] = _mm512_set1_epi32(x.zero_dot[b * R + i]);
    if constexpr (F == QuantFormat::Q8) {
#pragma GCC unroll 8
      for (size_t c = 0; c < 8; ++c) ChunkDots(isum, Join(p0 + 16 + 32 * c, p1 + 16 + 32 * c), xb + 4 * c * R);
    } else {
#pragma GCC unroll 4
      for (size_t c = 0; c < 4; ++c) {
        const __m512i codes = Join(p0 + 16 + 32 * c, p1 + 16 + 32 * c);
        ChunkDots(isum, _mm512_and_si512(codes, low), xb + 8 * c * R);
        ChunkDots(isum, _mm512_and_si512(_mm512_srli_epi16(codes, 4), low), xb + 4 * (2 * c + 1) * R);
      }
    }
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i)
      acc[i] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(scales, _mm512_set1_ps(x.d[b * R + i])), acc[i]);
  }
  const __mmask16 outputs = static_cast<__mmask16>((1u << t.nr) - 1);
  for (size_t i = 0; i < R; ++i) _mm512_mask_storeu_ps(t.y + i * t.ldy, outputs, acc[i]);
}
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// AVX2 (and AVX-512 without VNNI): 8 lanes, one group; with AVX-VNNI,
// vpdpbusd as on AVX3_DL (GroupTileAvxVnni). Without: vpmaddubsw multiplies
// unsigned by signed bytes into pairwise int16 sums. Q4: the 4-bit codes are
// the unsigned operand (8 products of 2 * 15 * 127 fit in int16); Q8: x
// takes the sign of its codes minus 128 (the signed q), so |q|, made once per
// block for every row, can be the unsigned operand (|q| <= 128 as an unsigned
// byte, even for q = -128: 2 * 128 * 127 fits), one int32 widening per chunk.
// 8 rows a tile: the weights' preparation serves twice the rows of 4 (q8 and
// q4 prefill +6-14 % with vpmaddubsw, unchanged with AVX-VNNI); 12 spill.
constexpr size_t kGroupsPerTile = 1;
constexpr size_t kQuantTileRows = 8;

HWY_INLINE __m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The tile's outputs: t.nr of each row's 8.
template <size_t R>
HWY_INLINE void StoreTile(const __m256 (&acc)[R], const GroupArgs& t) {
  for (size_t i = 0; i < R; ++i) {
    if (t.nr == 8) {
      _mm256_storeu_ps(t.y + i * t.ldy, acc[i]);
      continue;
    }
    HWY_ALIGN float out[8];
    _mm256_store_ps(out, acc[i]);
    std::copy_n(out, t.nr, t.y + i * t.ldy);
  }
}

template <size_t R, QuantFormat F>
HWY_NOINLINE void GroupTile(const GroupArgs& t) {
  const size_t BB = quant_block_bytes(F);
  const __m256i low = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(-128);
  __m256 acc[R];
  for (size_t i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  const QuantTile x = quant_tile(*t.a, QuantFormat::Q4, t.i0, t.k);  // Q8 needs no zero dots here
  for (size_t b = 0; b < t.blocks; ++b) {
    const uint8_t* p = t.g0 + b * BB;
    if (t.prefetch)
      for (size_t line = 0; line < BB; line += 64) hwy::Prefetch(p + line + kPrefetchBytes);
    const __m256 scales = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    __m256i w[8];      // w[c]: codes 4c..4c+3 of every row (Q8: as signed q)
    __m256i w_abs[8];  // Q8: |q|, the unsigned operand for every row
    for (size_t c = 0; c < 8; ++c) {
      if constexpr (F == QuantFormat::Q8) {
        w[c] = _mm256_xor_si256(Load32(p + 16 + 32 * c), flip);
        w_abs[c] = _mm256_sign_epi8(w[c], w[c]);
      } else if (c % 2 == 0) {
        const __m256i codes = Load32(p + 16 + 16 * c);
        w[c] = _mm256_and_si256(codes, low);
        w[c + 1] = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low);
      }
    }
    for (size_t i = 0; i < R; ++i) {
      const int8_t* xb = x.q + b * kQuantBlock * R + 4 * i;  // chunk c at 4 * c * R
      __m256 dot;
      if constexpr (F == QuantFormat::Q8) {
        __m256i isum = _mm256_setzero_si256();
        for (size_t c = 0; c < 8; ++c) {
          int32_t x4;
          std::memcpy(&x4, xb + 4 * c * R, 4);
          const __m256i xv = _mm256_set1_epi32(x4);
          isum = _mm256_add_epi32(isum,
                                  _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs[c], _mm256_sign_epi8(xv, w[c])), ones));
        }
        dot = _mm256_cvtepi32_ps(isum);
      } else {
        __m256i sum16 = _mm256_setzero_si256();
        for (size_t c = 0; c < 8; ++c) {
          int32_t x4;
          std::memcpy(&x4, xb + 4 * c * R, 4);
          sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(w[c], _mm256_set1_epi32(x4)));
        }
        dot = _mm256_cvtepi32_ps(
            _mm256_add_epi32(_mm256_madd_epi16(sum16, ones), _mm256_set1_epi32(x.zero_dot[b * R + i])));
      }
      acc[i] = _mm256_fmadd_ps(dot, _mm256_mul_ps(scales, _mm256_set1_ps(x.d[b * R + i])), acc[i]);
    }
  }
  StoreTile<R>(acc, t);
}

// AVX-VNNI (the CPU has it, simd::avx_vnni()): 256-bit vpdpbusd, as the
// AVX3_DL tile with one group: the same integers as the vpmaddubsw tile, so
// the same bits. Its target attribute is Highway's target string plus
// AVX-VNNI (clang takes a function's attribute instead of the pragma's, GCC
// in addition to it).
#define QINFER_AVX_VNNI __attribute__((target(HWY_TARGET_STR ",avxvnni")))

// ChunkDots on 256 bits.
template <size_t R>
HWY_INLINE QINFER_AVX_VNNI void ChunkDotsAvxVnni(__m256i (&isum)[R], __m256i w, const int8_t* xc) {
  for (size_t i = 0; i < R; ++i) {
    int32_t x4;
    std::memcpy(&x4, xc + 4 * i, 4);
    isum[i] = _mm256_dpbusd_avx_epi32(isum[i], w, _mm256_set1_epi32(x4));
  }
}

template <size_t R, QuantFormat F>
HWY_NOINLINE QINFER_AVX_VNNI void GroupTileAvxVnni(const GroupArgs& t) {
  const size_t BB = quant_block_bytes(F);
  const __m256i low = _mm256_set1_epi8(15);
  __m256 acc[R];
  for (size_t i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  const QuantTile x = quant_tile(*t.a, F, t.i0, t.k);
  for (size_t b = 0; b < t.blocks; ++b) {
    const uint8_t* p = t.g0 + b * BB;
    if (t.prefetch)
      for (size_t line = 0; line < BB; line += 64) hwy::Prefetch(p + line + kPrefetchBytes);
    const __m256 scales = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const int8_t* xb = x.q + b * kQuantBlock * R;
    __m256i isum[R];
    for (size_t i = 0; i < R; ++i) isum[i] = _mm256_set1_epi32(x.zero_dot[b * R + i]);
    if constexpr (F == QuantFormat::Q8) {
      for (size_t c = 0; c < 8; ++c) ChunkDotsAvxVnni(isum, Load32(p + 16 + 32 * c), xb + 4 * c * R);
    } else {
      for (size_t c = 0; c < 4; ++c) {
        const __m256i codes = Load32(p + 16 + 32 * c);
        ChunkDotsAvxVnni(isum, _mm256_and_si256(codes, low), xb + 8 * c * R);
        ChunkDotsAvxVnni(isum, _mm256_and_si256(_mm256_srli_epi16(codes, 4), low), xb + 4 * (2 * c + 1) * R);
      }
    }
    for (size_t i = 0; i < R; ++i)
      acc[i] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(scales, _mm256_set1_ps(x.d[b * R + i])), acc[i]);
  }
  StoreTile<R>(acc, t);
}
#else
// Portable: the same operations row by row, in the same order.
constexpr size_t kGroupsPerTile = 1;
constexpr size_t kQuantTileRows = 4;

template <size_t R, QuantFormat F>
HWY_NOINLINE void GroupTile(const GroupArgs& t) {
  const size_t BB = quant_block_bytes(F), blocks = t.blocks;
  const int zero = quant_zero_code(F);
  const QuantTile x = quant_tile(*t.a, F, t.i0, t.k);
  for (size_t i = 0; i < R; ++i) {
    for (size_t j = 0; j < t.nr; ++j) {
      float acc = 0;
      for (size_t b = 0; b < blocks; ++b) {
        const uint8_t* p = t.g0 + b * BB;
        const uint8_t* chunks = p + 16 + 4 * j;
        const int8_t* xb = x.q + b * kQuantBlock * R + 4 * i;  // chunk c at 4 * c * R
        int32_t isum = 0;
        for (size_t c = 0; c < 8; ++c)
          for (size_t e = 0; e < 4; ++e) {
            const int code =
                F == QuantFormat::Q8 ? chunks[32 * c + e] : (chunks[32 * (c / 2) + e] >> (4 * (c % 2))) & 15;
            isum += (code - zero) * xb[4 * c * R + e];
          }
        uint16_t half;
        std::memcpy(&half, p + 2 * j, 2);
        acc = std::fma(static_cast<float>(isum), f16_to_f32(half) * x.d[b * R + i], acc);
      }
      t.y[i * t.ldy + j] = acc;
    }
  }
}
#endif

// ---------------------------------------------------------------- activation

// Rows [i0, i1) of x [n, k] (i0 a tile's first row) quantized into tiles of
// tile_rows rows: GroupTile reads kQuantTileRows (QuantTile), the AMX tiles
// 1. Vectorized, with the scalar definition's exact operations (an IEEE
// divide for d and 1/d, a multiply, round to nearest even, a clamp), so every
// target quantizes alike.
void QuantizeActivation(const float* x, size_t n, size_t k, size_t i0, size_t i1, size_t tile_rows, int8_t* q, float* d,
                        int32_t* zero_dot_q8, int32_t* zero_dot_q4) {
  const hn::CappedTag<float, kQuantBlock> df;  // a block is a whole number of vectors
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df), blocks = k / kQuantBlock;
  for (size_t t = i0; t < i1; t += tile_rows) {
    const size_t rows = std::min(tile_rows, n - t);
    for (size_t i = 0; i < rows; ++i)
      for (size_t b = 0; b < blocks; ++b) {
        const float* xb = x + (t + i) * k + b * kQuantBlock;
        auto vmax = hn::Zero(df);
        for (size_t e = 0; e < kQuantBlock; e += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, xb + e)));
        const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
        const size_t at = t * blocks + b * rows + i;  // [block][row] in the tile
        d[at] = amax / 127.0f;
        const auto inv = hn::Set(df, amax > 0 ? 127.0f / amax : 0.0f);
        const auto lo = hn::Set(df, -127.0f), hi = hn::Set(df, 127.0f);
        auto sum = hn::Zero(di);
        HWY_ALIGN int8_t block[kQuantBlock];
        for (size_t e = 0; e < kQuantBlock; e += N) {
          const auto v = hn::NearestInt(hn::Min(hn::Max(hn::Round(hn::Mul(hn::LoadU(df, xb + e), inv)), lo), hi));
          sum = hn::Add(sum, v);
          hn::StoreU(hn::DemoteTo(d8, v), d8, block + e);
        }
        int8_t* out = q + t * k + b * kQuantBlock * rows + 4 * i;
        for (size_t c = 0; c < kQuantBlock / 4; ++c) std::memcpy(out + 4 * c * rows, block + 4 * c, 4);
        const int32_t total = hn::GetLane(hn::SumOfLanes(di, sum));
        zero_dot_q8[at] = -quant_zero_code(QuantFormat::Q8) * total;
        zero_dot_q4[at] = -quant_zero_code(QuantFormat::Q4) * total;
      }
  }
}

size_t QuantTileRowsOf() { return kQuantTileRows; }

const char* Int8DotPath() {
#if HWY_TARGET == HWY_AVX3_DL
  return "vpdpbusd (AVX512-VNNI), 16 rows per vector";
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if (HWY_TARGET == HWY_AVX2 && simd::avx_vnni()) return "vpdpbusd (AVX-VNNI), 8 rows per vector";
  return "vpmaddubsw, 8 rows per vector";
#else
  return "portable";
#endif
}

template <size_t R>
HWY_INLINE void GroupTileOf(const GroupArgs& t) {
  if (t.format == QuantFormat::Q8)
    GroupTile<R, QuantFormat::Q8>(t);
  else
    GroupTile<R, QuantFormat::Q4>(t);
}

// The tile of `rows` (1 .. kQuantTileRows) activation rows.
void GroupTileRows(size_t rows, const GroupArgs& t) {
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  if (simd::avx_vnni()) {
    with_rows<kQuantTileRows>(rows, [&](auto R) {
      if (t.format == QuantFormat::Q8)
        GroupTileAvxVnni<R(), QuantFormat::Q8>(t);
      else
        GroupTileAvxVnni<R(), QuantFormat::Q4>(t);
    });
    return;
  }
#endif
  with_rows<kQuantTileRows>(rows, [&](auto R) { GroupTileOf<R()>(t); });
}

// Weight rows [r0, r1) (r0 a multiple of 8) of a quantized matrix times
// activation rows [i0, i0 + ni). Many rows (prefill): activation tiles
// outside, the tiles of one or two groups inside, so a tile's activation rows
// stay in L1 while the caller's group of weight rows (sized for L2) streams
// past. Few rows (decode, batched decode: ni <= kStreamedRows): weight tiles
// outside, so the caller's long run of weight rows streams from memory once,
// prefetched ahead by the first activation tile and reused from L1 by the
// others. Either way each output is one tile's fixed arithmetic.
void QuantDotRows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
                  size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols), blocks = k / kQuantBlock;
  const QuantFormat f = w.quant_format();
  const size_t group_bytes = blocks * quant_block_bytes(f);
  const auto* base = static_cast<const uint8_t*>(w.data);
  constexpr size_t kTileWeightRows = kGroupsPerTile * kQuantGroupRows;
  auto tile = [&](size_t i, size_t r, bool prefetch) {
    const uint8_t* g0 = base + r / kQuantGroupRows * group_bytes;
    GroupTileRows(std::min(kQuantTileRows, ni - i),
                  {f, g0, r + kQuantGroupRows < r1 ? g0 + group_bytes : g0, blocks, &a, i0 + i, k,
                   y + i * ldy + (r - r0), ldy, std::min(kTileWeightRows, r1 - r), prefetch});
  };
  if (ni <= kStreamedRows) {
    for (size_t r = r0; r < r1; r += kTileWeightRows)
      for (size_t i = 0; i < ni; i += kQuantTileRows) tile(i, r, i == 0);
    return;
  }
  for (size_t i = 0; i < ni; i += kQuantTileRows)
    for (size_t r = r0; r < r1; r += kTileWeightRows) tile(i, r, false);
}

// ---------------------------------------------------------------- attention

// The attention-score tile: R query rows times C vectors of keys, R*C
// accumulators, C key vectors and a broadcast in 16 (AVX2) or 32 (AVX-512)
// registers.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kScoreTileRows = 6, kScoreTileVectors = 4;
#else
constexpr size_t kScoreTileRows = 4, kScoreTileVectors = 3;
#endif

// s[r * lds + col[c] + lane] = dot(q row r, key lane of vector c), r < R,
// c < C: keys in transposed blocks (kt[c] + d * ldk: dimension d of the
// vector's N consecutive keys), outer-product style: one accumulator per
// (row, vector), one multiply-add per dimension in order. The last vector
// stores its first `last_lanes` lanes only. Not inlined, so each tile has
// the whole register file (inlined tiles have spilled accumulators).
template <size_t R, size_t C, class Rows>
HWY_NOINLINE void ScoreTile(const float* q, size_t ldq, const typename Rows::T* const (&kt)[C], size_t ldk, size_t hd,
                            float* s, size_t lds, const size_t (&col)[C], size_t last_lanes) {
  const DF df;
  hn::Vec<DF> acc[R][C];
  for (size_t r = 0; r < R; ++r)
    for (size_t c = 0; c < C; ++c) acc[r][c] = hn::Zero(df);
  for (size_t d = 0; d < hd; ++d) {
    hn::Vec<DF> k[C];
    for (size_t c = 0; c < C; ++c) {
      k[c] = Rows::Load(df, kt[c] + d * ldk);
      KeepInRegister(k[c]);
    }
    for (size_t r = 0; r < R; ++r) {
      const auto b = hn::Set(df, q[r * ldq + d]);
      for (size_t c = 0; c < C; ++c) acc[r][c] = hn::MulAdd(b, k[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c + 1 < C; ++c) hn::StoreU(acc[r][c], df, s + r * lds + col[c]);
    hn::BlendedStore(acc[r][C - 1], hn::FirstN(df, last_lanes), df, s + r * lds + col[C - 1]);
  }
}

// All query rows times C key vectors, tiles of kScoreTileRows rows.
template <size_t C, class Rows>
void ScoreRows(const float* q, size_t nq, size_t ldq, const typename Rows::T* const (&kt)[C], size_t ldk, size_t hd,
               float* s, size_t lds, const size_t (&col)[C], size_t last_lanes) {
  for (size_t i = 0; i < nq; i += kScoreTileRows)
    with_rows<kScoreTileRows>(std::min(kScoreTileRows, nq - i), [&](auto R) {
      ScoreTile<R(), C, Rows>(q + i * ldq, ldq, kt, ldk, hd, s + i * lds, lds, col, last_lanes);
    });
}

// AttentionScores for keys stored as Rows::T. The keys [p0, p1) are cut into
// vectors of N consecutive keys within a block; a block's last few keys (fewer
// than N) are copied into a vector of their own, zeros after them, so every
// score comes out of the same vector arithmetic.
template <class Rows>
void ScoresOverBlocks(const float* q, size_t nq, size_t ldq, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* s, size_t lds) {
  using T = typename Rows::T;
  const size_t N = hn::Lanes(DF()), bs = static_cast<size_t>(kv.block_size);
  constexpr size_t C = kScoreTileVectors;
  const T* vectors[C];
  size_t cols[C], ready = 0;
  thread_local std::vector<T> part;
  for (int64_t p = p0; p < p1;) {
    const size_t in_block = static_cast<size_t>(p) % bs, count = std::min(bs - in_block, static_cast<size_t>(p1 - p));
    const T* keys = reinterpret_cast<const T*>(kv.keys + static_cast<size_t>(kv.blocks[static_cast<size_t>(p) / bs]) *
                                                             kv.block_stride) +
                    head * hd * bs + in_block;
    const size_t col = static_cast<size_t>(p - p0);
    size_t v = 0;
    for (; v + N <= count; v += N) {
      vectors[ready] = keys + v;
      cols[ready] = col + v;
      if (++ready == C) {
        ScoreRows<C, Rows>(q, nq, ldq, vectors, bs, hd, s, lds, cols, N);
        ready = 0;
      }
    }
    if (v < count) {  // the block's last keys
      part.assign(hd * N, T());
      for (size_t d = 0; d < hd; ++d) std::copy_n(keys + d * bs + v, count - v, &part[d * N]);
      const T* one[1] = {part.data()};
      const size_t at[1] = {col + v};
      ScoreRows<1, Rows>(q, nq, ldq, one, N, hd, s, lds, at, count - v);
    }
    p += static_cast<int64_t>(count);
  }
  for (size_t c = 0; c < ready; ++c) {  // the vectors short of a whole tile
    const T* one[1] = {vectors[c]};
    const size_t at[1] = {cols[c]};
    ScoreRows<1, Rows>(q, nq, ldq, one, bs, hd, s, lds, at, N);
  }
}

// The attention-values tile: R probability rows times C vectors of value
// columns, R*C accumulators, C value vectors and a broadcast in 16 (AVX2) or
// 32 (AVX-512) registers.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kValueTileRows = 6;
#else
constexpr size_t kValueTileRows = 2;
#endif
constexpr size_t kValueTileVectors = 4;

// Consecutive value rows of one kv head in one block.
template <class T>
struct ValueRun {
  const T* rows;  // row j at rows + j * hd
  size_t count;
};

// o[r * ldo + c0 ..] (C vectors) = the sum over the runs' rows j, in order, of
// p[r * ldp + j] * row j's columns c0 .., for r < R: outer-product style, each
// value vector loaded once serves R rows.
template <size_t R, size_t C, class Rows>
HWY_NOINLINE void ValueTile(const float* p, size_t ldp, const ValueRun<typename Rows::T>* runs, size_t n_runs,
                            size_t hd, size_t c0, float* o, size_t ldo) {
  const DF df;
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> acc[R][C];
  for (size_t r = 0; r < R; ++r)
    for (size_t c = 0; c < C; ++c) acc[r][c] = hn::Zero(df);
  size_t j = 0;
  for (size_t run = 0; run < n_runs; ++run)
    for (size_t i = 0; i < runs[run].count; ++i, ++j) {
      const typename Rows::T* vj = runs[run].rows + i * hd + c0;
      hn::Vec<DF> vc[C];
      for (size_t c = 0; c < C; ++c) {
        vc[c] = Rows::Load(df, vj + c * N);
        KeepInRegister(vc[c]);
      }
      for (size_t r = 0; r < R; ++r) {
        const auto b = hn::Set(df, p[r * ldp + j]);
        for (size_t c = 0; c < C; ++c) acc[r][c] = hn::MulAdd(b, vc[c], acc[r][c]);
      }
    }
  for (size_t r = 0; r < R; ++r)
    for (size_t c = 0; c < C; ++c) hn::StoreU(acc[r][c], df, o + r * ldo + c0 + c * N);
}

// AttentionValues for values stored as Rows::T: tiles of kValueTileRows rows,
// each over the whole key range, block after block.
template <class Rows>
void ValuesOverBlocks(const float* p, size_t np, size_t ldp, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* o, size_t ldo) {
  using T = typename Rows::T;
  const size_t N = hn::Lanes(DF()), bs = static_cast<size_t>(kv.block_size);
  thread_local std::vector<ValueRun<T>> runs;
  runs.clear();
  for (int64_t q = p0; q < p1;) {
    const size_t in_block = static_cast<size_t>(q) % bs, count = std::min(bs - in_block, static_cast<size_t>(p1 - q));
    const T* block = reinterpret_cast<const T*>(
        kv.values + static_cast<size_t>(kv.blocks[static_cast<size_t>(q) / bs]) * kv.block_stride);
    runs.push_back({block + (head * bs + in_block) * hd, count});
    q += static_cast<int64_t>(count);
  }
  for (size_t i = 0; i < np; i += kValueTileRows)
    with_rows<kValueTileRows>(std::min(kValueTileRows, np - i), [&](auto R) {
      const float* pr = p + i * ldp;
      float* or_ = o + i * ldo;
      size_t c = 0;
      for (; c + kValueTileVectors * N <= hd; c += kValueTileVectors * N)
        ValueTile<R(), kValueTileVectors, Rows>(pr, ldp, runs.data(), runs.size(), hd, c, or_, ldo);
      for (; c + N <= hd; c += N) ValueTile<R(), 1, Rows>(pr, ldp, runs.data(), runs.size(), hd, c, or_, ldo);
      for (; c < hd; ++c)  // columns past the last vector
        for (size_t r = 0; r < R(); ++r) {
          float sum = 0;
          size_t j = 0;
          for (const ValueRun<T>& run : runs)
            for (size_t k = 0; k < run.count; ++k, ++j)
              sum = std::fma(pr[r * ldp + j], load_as_f32(run.rows, Rows::kType, k * hd + c), sum);
          or_[r * ldo + c] = sum;
        }
    });
}

void AttentionScores(const float* q, size_t nq, size_t ldq, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                     int64_t p1, float* s, size_t lds) {
  switch (kv.type) {
    case DType::F32:
      return ScoresOverBlocks<F32Rows>(q, nq, ldq, kv, head, hd, p0, p1, s, lds);
    case DType::F16:
      return ScoresOverBlocks<F16Rows>(q, nq, ldq, kv, head, hd, p0, p1, s, lds);
    case DType::BF16:
      return ScoresOverBlocks<BF16Rows>(q, nq, ldq, kv, head, hd, p0, p1, s, lds);
    case DType::U8:
    case DType::F8_E4M3:
    case DType::I32:
      break;
  }
  HWY_ASSERT(false);
}

void AttentionValues(const float* p, size_t np, size_t ldp, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                     int64_t p1, float* o, size_t ldo) {
  switch (kv.type) {
    case DType::F32:
      return ValuesOverBlocks<F32Rows>(p, np, ldp, kv, head, hd, p0, p1, o, ldo);
    case DType::F16:
      return ValuesOverBlocks<F16Rows>(p, np, ldp, kv, head, hd, p0, p1, o, ldo);
    case DType::BF16:
      return ValuesOverBlocks<BF16Rows>(p, np, ldp, kv, head, hd, p0, p1, o, ldo);
    case DType::U8:
    case DType::F8_E4M3:
    case DType::I32:
      break;
  }
  HWY_ASSERT(false);
}

void WidenRows(const WeightMatrix& w, size_t r0, size_t r1, float* out) {
  const size_t k = static_cast<size_t>(w.cols);
  for (size_t r = r0; r < r1; ++r) {
    float* o = out + (r - r0) * k;
    if (w.quantized()) {  // an embedding row, or a conversion: not on a hot path
      dequantize_row(w.quant_format(), static_cast<const uint8_t*>(w.data), static_cast<int64_t>(r), w.cols, o);
      continue;
    }
    const uint8_t* row = w.row_ptr(static_cast<int64_t>(r));
    switch (w.format) {
      case WeightFormat::F32:
        simd::widen_f32(row, DType::F32, k, o);
        break;
      case WeightFormat::BF16:
        simd::widen_f32(row, DType::BF16, k, o);
        break;
      case WeightFormat::F16:
        simd::widen_f32(row, DType::F16, k, o);
        break;
      case WeightFormat::Q8:
      case WeightFormat::Q4:
        break;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::kernels {
HWY_EXPORT(QuantizeActivation);
HWY_EXPORT(QuantTileRowsOf);
HWY_EXPORT(Int8DotPath);
HWY_EXPORT(QuantDotRows);
HWY_EXPORT(WidenRows);
HWY_EXPORT(AttentionScores);
HWY_EXPORT(AttentionValues);

void quantize_activation(const float* x, size_t n, size_t k, size_t i0, size_t i1, size_t tile_rows, int8_t* q,
                         float* d, int32_t* zero_dot_q8, int32_t* zero_dot_q4) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivation)(x, n, k, i0, i1, tile_rows, q, d, zero_dot_q8, zero_dot_q4);
}
size_t quant_tile_rows() { return HWY_DYNAMIC_DISPATCH(QuantTileRowsOf)(); }
const char* int8_dot_path() {
  return amx_prefill() ? "AMX-INT8 tiles (tdpbssd) for prefill, vpdpbusd (AVX512-VNNI) for decode"
                       : HWY_DYNAMIC_DISPATCH(Int8DotPath)();
}
void dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
              size_t ldy) {
  if (!w.quantized()) return float_dot_rows(w, a, i0, ni, r0, r1, y, ldy);
  if (a.amx) return amx_quant_dot_rows(w, a, i0, ni, r0, r1, y, ldy);
  HWY_DYNAMIC_DISPATCH(QuantDotRows)(w, a, i0, ni, r0, r1, y, ldy);
}
void widen_rows(const WeightMatrix& w, size_t r0, size_t r1, float* out) {
  HWY_DYNAMIC_DISPATCH(WidenRows)(w, r0, r1, out);
}
void attention_scores(const float* q, size_t nq, size_t ldq, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* s, size_t lds) {
  HWY_DYNAMIC_DISPATCH(AttentionScores)(q, nq, ldq, kv, head, hd, p0, p1, s, lds);
}
void attention_values(const float* p, size_t np, size_t ldp, const KvBlocks& kv, size_t head, size_t hd, int64_t p0,
                      int64_t p1, float* o, size_t ldo) {
  HWY_DYNAMIC_DISPATCH(AttentionValues)(p, np, ldp, kv, head, hd, p0, p1, o, ldo);
}
}  // namespace qinfer::kernels
#endif
