// Highway kernels with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/matmul_kernels.h"
#include "ops/simd.h"

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

// Weight rows per register tile: four independent streams keep enough loads
// in flight in decode, and each activation vector loaded serves four rows.
constexpr size_t kW = 4;

// Decode streams weights from memory: software prefetch this far ahead of the
// loads (measured best among 2-12 KiB on the 2-core AVX2 machine: ~10% more
// bandwidth than the hardware prefetchers alone).
constexpr size_t kPrefetchBytes = 12288;

template <class D, class V>
HWY_INLINE float Sum(D d, V v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// ---------------------------------------------------------------- activation

void QuantizeActivation(const float* x, size_t n, size_t k, int8_t* q, float* d, float* q4_bias) {
  for (size_t b = 0; b < n * k / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
    d[b] = amax / 127.0f;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i) {
      const int v = static_cast<int>(std::clamp(std::nearbyint(xb[i] * inv), -127.0f, 127.0f));
      q[b * kQuantBlock + i] = static_cast<int8_t>(v);
      sum += v;
    }
    q4_bias[b] = static_cast<float>(-8 * sum);
  }
}

// ---------------------------------------------------------------- tiles

// Pins a vector in a register. x86 compilers like to fold a vector that is
// used several times back into each instruction as a memory operand, which
// turns a tile's loads-per-FMA from (R + 4) / 4R into more than one and makes
// the load ports, not the FMA units, the bottleneck.
template <class V>
HWY_INLINE void KeepInRegister(V& v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
  asm("" : "+v"(v.raw));
#else
  (void)v;
#endif
}

// The weight rows of a tile, first + j * stride for j < nr, whose outputs go
// to y[j * stride]. Missing rows (j >= nr) repeat the last one, computed and
// discarded, so the tiles have no row branches.
struct TileRowSet {
  size_t first, stride, nr;
};

template <class T>
HWY_INLINE void RowPointers(const WeightMatrix& w, const TileRowSet& t, const T* (&p)[kW]) {
  for (size_t j = 0; j < kW; ++j)
    p[j] = reinterpret_cast<const T*>(w.row_ptr(static_cast<int64_t>(t.first + std::min(j, t.nr - 1) * t.stride)));
}

// s + sum of w[e] * x[e] for e in [from, k): the elements past the last full
// vector, one shared function so every tile size rounds them alike. An
// explicit fused multiply-add: left to the compiler, `s += w * x` is
// contracted in some inlined copies and not in others.
float TailDot(float s, const void* w, DType t, const float* x, size_t from, size_t k) {
  for (size_t e = from; e < k; ++e) s = std::fma(load_as_f32(w, t, e), x[e], s);
  return s;
}

// Float rows differ only in how a vector of weights is loaded (widened in
// registers: the weights are never copied in decode).
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

// R activation rows (R <= 3: 12 accumulators, R row vectors and one weight
// vector fill the 16 registers of AVX2) times kW weight rows. Not inlined:
// inside DotRows the compiler keeps the quantized tiles' constants in two of
// the 16 registers and spills two accumulators to the stack, a store/load in
// every FMA chain (measured: prefill 35 instead of 72 GFLOP/s per core).
template <size_t R, class Rows>
HWY_NOINLINE void TileFloat(const typename Rows::T* const (&p)[kW], const float* x, size_t ldx, size_t k, float* y,
                          size_t ldy, size_t ldj, size_t nr) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const float* x0 = x;
  const float* x1 = R > 1 ? x + ldx : x;
  const float* x2 = R > 2 ? x + 2 * ldx : x;
  auto a00 = hn::Zero(df), a01 = hn::Zero(df), a02 = hn::Zero(df), a03 = hn::Zero(df);
  auto a10 = hn::Zero(df), a11 = hn::Zero(df), a12 = hn::Zero(df), a13 = hn::Zero(df);
  auto a20 = hn::Zero(df), a21 = hn::Zero(df), a22 = hn::Zero(df), a23 = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= k; i += N) {
    auto u0 = hn::LoadU(df, x0 + i);
    auto u1 = R > 1 ? hn::LoadU(df, x1 + i) : u0;
    auto u2 = R > 2 ? hn::LoadU(df, x2 + i) : u0;
    KeepInRegister(u0);
    if constexpr (R > 1) KeepInRegister(u1);
    if constexpr (R > 2) KeepInRegister(u2);
    if constexpr (R == 1)
      if ((i * sizeof(typename Rows::T)) % 64 == 0)  // once per cache line
        for (size_t j = 0; j < kW; ++j) hwy::Prefetch(reinterpret_cast<const uint8_t*>(p[j] + i) + kPrefetchBytes);
    auto step = [&](hn::Vec<DF> w, hn::Vec<DF>& c0, hn::Vec<DF>& c1, hn::Vec<DF>& c2) {
      KeepInRegister(w);
      c0 = hn::MulAdd(w, u0, c0);
      if constexpr (R > 1) c1 = hn::MulAdd(w, u1, c1);
      if constexpr (R > 2) c2 = hn::MulAdd(w, u2, c2);
    };
    step(Rows::Load(df, p[0] + i), a00, a10, a20);
    step(Rows::Load(df, p[1] + i), a01, a11, a21);
    step(Rows::Load(df, p[2] + i), a02, a12, a22);
    step(Rows::Load(df, p[3] + i), a03, a13, a23);
  }
  auto finish = [&](size_t row, const float* xr, hn::Vec<DF> c0, hn::Vec<DF> c1, hn::Vec<DF> c2, hn::Vec<DF> c3) {
    const float s[kW] = {Sum(df, c0), Sum(df, c1), Sum(df, c2), Sum(df, c3)};
    for (size_t j = 0; j < nr; ++j) y[row * ldy + j * ldj] = TailDot(s[j], p[j], Rows::kType, xr, i, k);
  };
  finish(0, x0, a00, a01, a02, a03);
  if constexpr (R > 1) finish(1, x1, a10, a11, a12, a13);
  if constexpr (R > 2) finish(2, x2, a20, a21, a22, a23);
}

// Q8: the integer dot product of the quantized activation with one weight
// row, per 32-block: lane partial sums (any lane layout; only their total
// matters). A block of the activation is loaded once (BlockX) for all rows of
// a tile.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// x86 (AVX2 and up): vpmaddubsw multiplies unsigned by signed bytes into
// pairwise int16 sums, twice the work per instruction of the int16 path. Q8
// moves x's sign onto the weights so |x| can be the unsigned operand. No
// overflow: 2 * 127 * 127 fits in int16.
using BlockSums = __m256i;
HWY_INLINE __m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

struct BlockX {
  __m256i x, abs_x;
};
HWY_INLINE BlockX LoadBlockX(const int8_t* xq) {
  const __m256i x = Load32(xq);
  return {x, _mm256_sign_epi8(x, x)};
}
HWY_INLINE __m256i BlockDot(const uint8_t* quants, size_t b, const BlockX& x) {
  const __m256i pairs16 = _mm256_maddubs_epi16(x.abs_x, _mm256_sign_epi8(Load32(quants + b * kQuantBlock), x.x));
  return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1));
}
HWY_INLINE hn::Vec<DF32> ToFloat(__m256i v) { return hn::Vec<DF32>{_mm256_cvtepi32_ps(v)}; }
#else
// Portable: bytes widened to int16, int16 x int16 -> int32 pair sums.
using BlockSums = hn::Vec<D32>;
struct BlockX {
  const int8_t* xq;
};
HWY_INLINE BlockX LoadBlockX(const int8_t* xq) { return {xq}; }
HWY_INLINE hn::Vec<D32> BlockDot(const uint8_t* quants, size_t b, const BlockX& x) {
  const D16 d16;
  const D32 d32;
  const hn::Rebind<int8_t, D16> d8;
  auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
  for (size_t off = 0; off < kQuantBlock; off += hn::Lanes(d16)) {
    const auto xv = hn::PromoteTo(d16, hn::LoadU(d8, x.xq + off));
    const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(quants + b * kQuantBlock + off)));
    s0 = hn::ReorderWidenMulAccumulate(d32, wv, xv, s0, s1);
  }
  return hn::Add(s0, s1);
}
HWY_INLINE hn::Vec<DF32> ToFloat(hn::Vec<D32> v) { return hn::ConvertTo(DF32(), v); }
#endif

// s[j][g] = scale of block b0 + g of weight row j times the activation's scale
// of that block, for g < count (count <= Lanes(DF)).
using Lanes = float[HWY_MAX_BYTES / sizeof(float)];
HWY_INLINE void BlockScales(const uint16_t* const (&sc)[kW], const float* d, size_t b0, size_t count,
                            Lanes (&s)[kW]) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  if (count == hn::Lanes(df)) {
    const auto dx = hn::LoadU(df, d + b0);
    for (size_t j = 0; j < kW; ++j)
      hn::Store(hn::Mul(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(sc[j] + b0))), dx), df,
                s[j]);
    return;
  }
  for (size_t j = 0; j < kW; ++j)
    for (size_t g = 0; g < count; ++g) s[j][g] = f16_to_f32(sc[j][b0 + g]) * d[b0 + g];
}

// One quantized activation row times kW rows of Q8 weights: per 32-block an
// exact integer dot product, converted and scaled into a float accumulator.
HWY_NOINLINE void TileQ8(const WeightMatrix& w, const TileRowSet& rows, const Activations& a, size_t i0, float* y) {
  const DF df;
  const DF32 df32;
  const size_t G = hn::Lanes(df);
  const size_t k = static_cast<size_t>(w.cols), blocks = k / kQuantBlock;
  const int8_t* xrow = a.q + i0 * k;
  const float* drow = a.d + i0 * blocks;
  const uint8_t* p[kW];
  RowPointers(w, rows, p);
  const uint16_t* sc[kW];
  for (size_t j = 0; j < kW; ++j) {  // a row: its scales, then its quants
    sc[j] = reinterpret_cast<const uint16_t*>(p[j]);
    p[j] += quant_scale_bytes(w.cols);
  }
  auto f0 = hn::Zero(df32), f1 = hn::Zero(df32), f2 = hn::Zero(df32), f3 = hn::Zero(df32);
  HWY_ALIGN Lanes s[kW];
  for (size_t b0 = 0; b0 < blocks; b0 += G) {
    const size_t count = std::min(G, blocks - b0);
    BlockScales(sc, drow, b0, count, s);
    for (size_t g = 0; g < count; ++g) {
      const size_t b = b0 + g;
      if ((b * kQuantBlock) % 64 == 0)  // once per cache line; the rows are one stream
        for (size_t j = 0; j < kW; ++j) hwy::Prefetch(p[j] + b * kQuantBlock + kPrefetchBytes);
      const BlockX x = LoadBlockX(xrow + b * kQuantBlock);
      f0 = hn::MulAdd(ToFloat(BlockDot(p[0], b, x)), hn::Set(df32, s[0][g]), f0);
      f1 = hn::MulAdd(ToFloat(BlockDot(p[1], b, x)), hn::Set(df32, s[1][g]), f1);
      f2 = hn::MulAdd(ToFloat(BlockDot(p[2], b, x)), hn::Set(df32, s[2][g]), f2);
      f3 = hn::MulAdd(ToFloat(BlockDot(p[3], b, x)), hn::Set(df32, s[3][g]), f3);
    }
  }
  const float sums[kW] = {Sum(df32, f0), Sum(df32, f1), Sum(df32, f2), Sum(df32, f3)};
  for (size_t j = 0; j < rows.nr; ++j) y[j * rows.stride] = sums[j];
}

// One quantized activation row times a group of 8 Q4 weight rows (quant.h),
// rows in the vector lanes: per block, the integer dot products of all 8 rows
// at once, then one conversion, the zero point's share (q4_bias: -8 * the sum
// of the activation block) and one FMA with the 8 rows' scales. Writes the
// first nr of the 8 outputs to y[0, nr).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
HWY_NOINLINE void TileQ4Group(const uint8_t* group, size_t blocks, const int8_t* xq, const float* dx,
                              const float* bias, float* y, size_t nr) {
  const __m256i low = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* p = group + b * kQ4BlockBytes;
    for (size_t line = 0; line < kQ4BlockBytes; line += 64) hwy::Prefetch(p + line + kPrefetchBytes);
    // Chunk c: 4 codes of each row in the low nibbles (weights 8c..8c+3) and
    // 4 in the high nibbles (8c+4..8c+7), each against the activation's 4
    // bytes broadcast. No overflow: 8 products of 2 * 15 * 127 fit in int16.
    __m256i sum16 = _mm256_setzero_si256();
    for (size_t c = 0; c < 4; ++c) {
      const __m256i codes = Load32(p + 16 + 32 * c);
      int32_t x_low, x_high;
      std::memcpy(&x_low, xq + b * kQuantBlock + 8 * c, 4);
      std::memcpy(&x_high, xq + b * kQuantBlock + 8 * c + 4, 4);
      sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(_mm256_and_si256(codes, low), _mm256_set1_epi32(x_low)));
      sum16 = _mm256_add_epi16(
          sum16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(codes, 4), low), _mm256_set1_epi32(x_high)));
    }
    const __m256 dot = _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(sum16, ones)), _mm256_set1_ps(bias[b]));
    const __m256 scale =
        _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), _mm256_set1_ps(dx[b]));
    acc = _mm256_fmadd_ps(dot, scale, acc);
  }
  HWY_ALIGN float out[kQ4GroupRows];
  _mm256_store_ps(out, acc);
  std::copy_n(out, nr, y);
}
#else
// Portable: the same operations row by row, in the same order (one rounding
// per conversion, multiply and fused multiply-add), so every target gives the
// same bits.
HWY_NOINLINE void TileQ4Group(const uint8_t* group, size_t blocks, const int8_t* xq, const float* dx,
                              const float* bias, float* y, size_t nr) {
  for (size_t j = 0; j < nr; ++j) {
    float acc = 0;
    for (size_t b = 0; b < blocks; ++b) {
      const uint8_t* p = group + b * kQ4BlockBytes;
      const int8_t* x = xq + b * kQuantBlock;
      int32_t isum = 0;
      for (size_t c = 0; c < 4; ++c)
        for (size_t i = 0; i < 4; ++i) {
          const uint8_t byte = p[16 + 32 * c + 4 * j + i];
          isum += (byte & 15) * x[8 * c + i] + (byte >> 4) * x[8 * c + 4 + i];
        }
      uint16_t half;
      std::memcpy(&half, p + 2 * j, 2);
      acc = std::fma(static_cast<float>(isum) + bias[b], f16_to_f32(half) * dx[b], acc);
    }
    y[j] = acc;
  }
}
#endif

// ---------------------------------------------------------------- attention

// y[i * ldy + j] = dot(x row i, row j of w) for i < nx, j < nw, rows of length
// k at strides ldx and ldw: attention scores, keys stored as Rows::T.
template <class Rows>
void DotStrided(const float* x, size_t nx, size_t ldx, const void* w, size_t nw, size_t ldw, size_t k, float* y,
                size_t ldy) {
  const auto* base = static_cast<const typename Rows::T*>(w);
  for (size_t i = 0; i < nx; i += 3) {
    const size_t rows = std::min<size_t>(3, nx - i);
    for (size_t j = 0; j < nw; j += kW) {
      const size_t nr = std::min(kW, nw - j);
      const typename Rows::T* p[kW];
      for (size_t q = 0; q < kW; ++q) p[q] = base + (j + std::min(q, nr - 1)) * ldw;
      float* yt = y + i * ldy + j;
      if (rows == 3) TileFloat<3, Rows>(p, x + i * ldx, ldx, k, yt, ldy, 1, nr);
      else if (rows == 2) TileFloat<2, Rows>(p, x + i * ldx, ldx, k, yt, ldy, 1, nr);
      else TileFloat<1, Rows>(p, x + i * ldx, ldx, k, yt, ldy, 1, nr);
    }
  }
}

// o[i][c0 .. c0 + C*N) += sum over j < nv of p[i][j] * v[j][c0 ..]: R rows of
// probabilities times C vectors of value columns, outer-product style (each
// value vector loaded once serves R rows).
template <size_t R, size_t C, class Rows>
HWY_INLINE void TileAccumulate(const float* p, size_t ldp, const typename Rows::T* v, size_t ldv, size_t nv, float* o,
                               size_t ldo) {
  static_assert(R <= 2 && C <= 4, "8 accumulators, 4 value vectors");
  const DF df;
  const size_t N = hn::Lanes(df);
  auto load_row = [&](size_t r, hn::Vec<DF>& c0, hn::Vec<DF>& c1, hn::Vec<DF>& c2, hn::Vec<DF>& c3) {
    c0 = hn::LoadU(df, o + r * ldo);
    if constexpr (C > 1) c1 = hn::LoadU(df, o + r * ldo + N);
    if constexpr (C > 2) c2 = hn::LoadU(df, o + r * ldo + 2 * N);
    if constexpr (C > 3) c3 = hn::LoadU(df, o + r * ldo + 3 * N);
  };
  auto store_row = [&](size_t r, hn::Vec<DF> c0, hn::Vec<DF> c1, hn::Vec<DF> c2, hn::Vec<DF> c3) {
    hn::StoreU(c0, df, o + r * ldo);
    if constexpr (C > 1) hn::StoreU(c1, df, o + r * ldo + N);
    if constexpr (C > 2) hn::StoreU(c2, df, o + r * ldo + 2 * N);
    if constexpr (C > 3) hn::StoreU(c3, df, o + r * ldo + 3 * N);
  };
  auto a00 = hn::Zero(df), a01 = hn::Zero(df), a02 = hn::Zero(df), a03 = hn::Zero(df);
  auto a10 = hn::Zero(df), a11 = hn::Zero(df), a12 = hn::Zero(df), a13 = hn::Zero(df);
  load_row(0, a00, a01, a02, a03);
  if constexpr (R > 1) load_row(1, a10, a11, a12, a13);
  for (size_t j = 0; j < nv; ++j) {
    const typename Rows::T* vj = v + j * ldv;
    auto v0 = Rows::Load(df, vj);
    auto v1 = C > 1 ? Rows::Load(df, vj + N) : v0;
    auto v2 = C > 2 ? Rows::Load(df, vj + 2 * N) : v0;
    auto v3 = C > 3 ? Rows::Load(df, vj + 3 * N) : v0;
    KeepInRegister(v0);
    if constexpr (C > 1) KeepInRegister(v1);
    if constexpr (C > 2) KeepInRegister(v2);
    if constexpr (C > 3) KeepInRegister(v3);
    auto step = [&](float pj, hn::Vec<DF>& c0, hn::Vec<DF>& c1, hn::Vec<DF>& c2, hn::Vec<DF>& c3) {
      const auto b = hn::Set(df, pj);
      c0 = hn::MulAdd(b, v0, c0);
      if constexpr (C > 1) c1 = hn::MulAdd(b, v1, c1);
      if constexpr (C > 2) c2 = hn::MulAdd(b, v2, c2);
      if constexpr (C > 3) c3 = hn::MulAdd(b, v3, c3);
    };
    step(p[j], a00, a01, a02, a03);
    if constexpr (R > 1) step(p[ldp + j], a10, a11, a12, a13);
  }
  store_row(0, a00, a01, a02, a03);
  if constexpr (R > 1) store_row(1, a10, a11, a12, a13);
}

template <size_t R, class Rows>
void AccumulateRowTile(const float* p, size_t ldp, const typename Rows::T* v, size_t nv, size_t ldv, size_t d, float* o,
                       size_t ldo) {
  const size_t N = hn::Lanes(DF());
  size_t c = 0;
  for (; c + 4 * N <= d; c += 4 * N) TileAccumulate<R, 4, Rows>(p, ldp, v + c, ldv, nv, o + c, ldo);
  for (; c + N <= d; c += N) TileAccumulate<R, 1, Rows>(p, ldp, v + c, ldv, nv, o + c, ldo);
  for (; c < d; ++c)  // columns past the last vector
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < nv; ++j) o[r * ldo + c] += p[r * ldp + j] * load_as_f32(v + j * ldv, Rows::kType, c);
}

template <class Rows>
void AccumulateStrided(const float* p, size_t np, size_t ldp, const void* v, size_t nv, size_t ldv, size_t d, float* o,
                       size_t ldo) {
  const auto* base = static_cast<const typename Rows::T*>(v);
  size_t i = 0;
  for (; i + 2 <= np; i += 2) AccumulateRowTile<2, Rows>(p + i * ldp, ldp, base, nv, ldv, d, o + i * ldo, ldo);
  for (; i < np; ++i) AccumulateRowTile<1, Rows>(p + i * ldp, ldp, base, nv, ldv, d, o + i * ldo, ldo);
}

void AttentionScores(const float* q, size_t nq, size_t ldq, const void* k, DType kt, size_t nk, size_t ldk, size_t hd,
                     float* s, size_t lds) {
  switch (kt) {
    case DType::F32: return DotStrided<F32Rows>(q, nq, ldq, k, nk, ldk, hd, s, lds);
    case DType::F16: return DotStrided<F16Rows>(q, nq, ldq, k, nk, ldk, hd, s, lds);
    case DType::BF16: return DotStrided<BF16Rows>(q, nq, ldq, k, nk, ldk, hd, s, lds);
    case DType::U8: break;
  }
  HWY_ASSERT(false);
}

void AttentionValues(const float* p, size_t np, size_t ldp, const void* v, DType vt, size_t nv, size_t ldv, size_t hd,
                     float* o, size_t ldo) {
  switch (vt) {
    case DType::F32: return AccumulateStrided<F32Rows>(p, np, ldp, v, nv, ldv, hd, o, ldo);
    case DType::F16: return AccumulateStrided<F16Rows>(p, np, ldp, v, nv, ldv, hd, o, ldo);
    case DType::BF16: return AccumulateStrided<BF16Rows>(p, np, ldp, v, nv, ldv, hd, o, ldo);
    case DType::U8: break;
  }
  HWY_ASSERT(false);
}

size_t TileRows(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32: return 3;
    case WeightFormat::F16:
    case WeightFormat::BF16:
    case WeightFormat::Q8:
    case WeightFormat::Q4: return 1;
  }
  return 1;
}

// One tile: R (<= TileRows) activation rows starting at i0 times the weight rows of t.
template <size_t R>
HWY_INLINE void TileOf(const WeightMatrix& w, const Activations& a, size_t i0, const TileRowSet& t, float* y,
                       size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols);
  switch (w.format) {
    case WeightFormat::F32: {
      const float* p[kW];
      RowPointers(w, t, p);
      return TileFloat<R, F32Rows>(p, a.x + i0 * k, k, k, y, ldy, t.stride, t.nr);
    }
    case WeightFormat::F16: {
      const hwy::float16_t* p[kW];
      RowPointers(w, t, p);
      return TileFloat<R, F16Rows>(p, a.x + i0 * k, k, k, y, ldy, t.stride, t.nr);
    }
    case WeightFormat::BF16: {
      const hwy::bfloat16_t* p[kW];
      RowPointers(w, t, p);
      return TileFloat<R, BF16Rows>(p, a.x + i0 * k, k, k, y, ldy, t.stride, t.nr);
    }
    case WeightFormat::Q8:
      if constexpr (R == 1) return TileQ8(w, t, a, i0, y);
      break;
    case WeightFormat::Q4:  // decode only, by groups of 8 rows (DotRows)
      break;
  }
  HWY_ASSERT(false);  // more rows than the format's tile: TileRows is the contract
}

void DotRows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
             size_t ldy) {
  if (ni == 1 && w.format == WeightFormat::Q4) {
    // A Q4 group of 8 rows is contiguous: consecutive groups are one long
    // stream. r0 is a multiple of 8 (matmul.cpp's row groups).
    const size_t k = static_cast<size_t>(w.cols), blocks = k / kQuantBlock;
    const auto* base = static_cast<const uint8_t*>(w.data);
    for (size_t r = r0; r < r1; r += kQ4GroupRows)
      TileQ4Group(base + r / kQ4GroupRows * blocks * kQ4BlockBytes, blocks, a.q + i0 * k, a.d + i0 * blocks,
                  a.q4_bias + i0 * blocks, y + (r - r0), std::min<size_t>(kQ4GroupRows, r1 - r));
    return;
  }
  if (ni == 1) {
    // Decode streams the weights from memory. Rows side by side would be four
    // short streams restarting every tile (a 1 KiB Q8 row is 16 cache lines),
    // which the prefetchers follow badly (measured: half the bandwidth of
    // long rows); instead tile t takes row t of each quarter of the group, so
    // the four streams run through the whole group.
    const size_t quarter = (r1 - r0) / kW;
    for (size_t t = 0; t < quarter; ++t) TileOf<1>(w, a, i0, {r0 + t, quarter, kW}, y + t, ldy);
    for (size_t r = r0 + kW * quarter; r < r1; r += kW)
      TileOf<1>(w, a, i0, {r, 1, std::min(kW, r1 - r)}, y + (r - r0), ldy);
    return;
  }
  // Prefill: activation tiles outside, weight rows inside, so the tile's
  // rows stay in L1 while the caller's group of weight rows (sized for L2)
  // streams past.
  const size_t R = TileRows(w.format);
  for (size_t i = 0; i < ni; i += R) {
    const size_t rows = std::min(R, ni - i);
    for (size_t r = r0; r < r1; r += kW) {
      const TileRowSet t{r, 1, std::min(kW, r1 - r)};
      float* yt = y + i * ldy + (r - r0);
      if (rows == 3) TileOf<3>(w, a, i0 + i, t, yt, ldy);
      else if (rows == 2) TileOf<2>(w, a, i0 + i, t, yt, ldy);
      else TileOf<1>(w, a, i0 + i, t, yt, ldy);
    }
  }
}

// dequantize_row (quant.h), a vector of codes at a time.
void DequantizeQ8Row(const uint8_t* row, size_t k, float* out) {
  const hn::CappedTag<float, kQuantBlock> df;  // a block is a whole number of vectors
  const hn::Rebind<int8_t, decltype(df)> d8;
  const hn::Rebind<int32_t, decltype(df)> di;
  const size_t N = hn::Lanes(df);
  const auto* scales = reinterpret_cast<const uint16_t*>(row);
  const auto* quants = reinterpret_cast<const int8_t*>(row + quant_scale_bytes(static_cast<int64_t>(k)));
  for (size_t b = 0; b < k / kQuantBlock; ++b) {
    const auto d = hn::Set(df, f16_to_f32(scales[b]));
    for (size_t i = 0; i < kQuantBlock; i += N)
      hn::StoreU(hn::Mul(d, hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, quants + b * kQuantBlock + i)))), df,
                 out + b * kQuantBlock + i);
  }
}

// Row j of a Q4 group: per block and chunk, 4 bytes give the row's codes of
// weights 8c..8c+3 (low nibbles) and 8c+4..8c+7 (high nibbles).
void DequantizeQ4Row(const uint8_t* group, size_t j, size_t k, float* out) {
  const hn::CappedTag<float, 4> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint32_t, decltype(df)> du32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t N = hn::Lanes(df);
  const auto low = hn::Set(di, 15), eight = hn::Set(di, 8);
  for (size_t b = 0; b < k / kQuantBlock; ++b) {
    const uint8_t* p = group + b * kQ4BlockBytes;
    uint16_t half;
    std::memcpy(&half, p + 2 * j, 2);
    const auto d = hn::Set(df, f16_to_f32(half));
    float* o = out + b * kQuantBlock;
    for (size_t c = 0; c < 4; ++c)
      for (size_t i = 0; i < 4; i += N) {
        const auto bytes = hn::BitCast(di, hn::PromoteTo(du32, hn::LoadU(du8, p + 16 + 32 * c + 4 * j + i)));
        hn::StoreU(hn::Mul(d, hn::ConvertTo(df, hn::Sub(hn::And(bytes, low), eight))), df, o + 8 * c + i);
        hn::StoreU(hn::Mul(d, hn::ConvertTo(df, hn::Sub(hn::ShiftRight<4>(bytes), eight))), df, o + 8 * c + 4 + i);
      }
  }
}

void WidenRows(const WeightMatrix& w, size_t r0, size_t r1, float* out) {
  const size_t k = static_cast<size_t>(w.cols);
  for (size_t r = r0; r < r1; ++r) {
    float* o = out + (r - r0) * k;
    if (w.format == WeightFormat::Q4) {
      const auto* group = static_cast<const uint8_t*>(w.data) + r / kQ4GroupRows * (k / kQuantBlock) * kQ4BlockBytes;
      DequantizeQ4Row(group, r % kQ4GroupRows, k, o);
      continue;
    }
    const uint8_t* row = w.row_ptr(static_cast<int64_t>(r));
    switch (w.format) {
      case WeightFormat::F32: simd::widen_f32(row, DType::F32, k, o); break;
      case WeightFormat::BF16: simd::widen_f32(row, DType::BF16, k, o); break;
      case WeightFormat::F16: simd::widen_f32(row, DType::F16, k, o); break;
      case WeightFormat::Q8: DequantizeQ8Row(row, k, o); break;
      case WeightFormat::Q4: break;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::kernels {
HWY_EXPORT(QuantizeActivation);
HWY_EXPORT(TileRows);
HWY_EXPORT(DotRows);
HWY_EXPORT(WidenRows);
HWY_EXPORT(AttentionScores);
HWY_EXPORT(AttentionValues);

void quantize_activation(const float* x, size_t n, size_t k, int8_t* q, float* d, float* q4_bias) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivation)(x, n, k, q, d, q4_bias);
}
size_t tile_rows(WeightFormat f) { return HWY_DYNAMIC_DISPATCH(TileRows)(f); }
void dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
              size_t ldy) {
  HWY_DYNAMIC_DISPATCH(DotRows)(w, a, i0, ni, r0, r1, y, ldy);
}
void widen_rows(const WeightMatrix& w, size_t r0, size_t r1, float* out) { HWY_DYNAMIC_DISPATCH(WidenRows)(w, r0, r1, out); }
void attention_scores(const float* q, size_t nq, size_t ldq, const void* k, DType kt, size_t nk, size_t ldk, size_t hd,
                      float* s, size_t lds) {
  HWY_DYNAMIC_DISPATCH(AttentionScores)(q, nq, ldq, k, kt, nk, ldk, hd, s, lds);
}
void attention_values(const float* p, size_t np, size_t ldp, const void* v, DType vt, size_t nv, size_t ldv, size_t hd,
                      float* o, size_t ldo) {
  HWY_DYNAMIC_DISPATCH(AttentionValues)(p, np, ldp, v, vt, nv, ldv, hd, o, ldo);
}
}  // namespace qinfer::kernels
#endif
