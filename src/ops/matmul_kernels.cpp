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
constexpr size_t kPrefetchBytes = 8192;

template <class D, class V>
HWY_INLINE float Sum(D d, V v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// ---------------------------------------------------------------- activation

void QuantizeActivation(const float* x, size_t n, size_t k, int16_t* q, float* d) {
  for (size_t b = 0; b < n * k / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
    d[b] = amax / 127.0f;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    for (int64_t i = 0; i < kQuantBlock; ++i)
      q[b * kQuantBlock + i] = static_cast<int16_t>(std::clamp(std::nearbyint(xb[i] * inv), -127.0f, 127.0f));
  }
}

size_t BiasLanes() { return hn::Lanes(D32()); }

void Q4Bias(const int16_t* q, size_t n, size_t k, int32_t* bias) {
  const D16 d16;
  const D32 d32;
  const size_t N16 = hn::Lanes(d16), N32 = hn::Lanes(d32);
  const auto minus8 = hn::Set(d16, int16_t{-8});
  for (size_t b = 0; b < n * k / kQuantBlock; ++b) {
    auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
    for (size_t off = 0; off < kQuantBlock; off += N16)
      s0 = hn::ReorderWidenMulAccumulate(d32, minus8, hn::LoadU(d16, q + b * kQuantBlock + off), s0, s1);
    hn::StoreU(hn::Add(s0, s1), d32, bias + b * N32);
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

// Pointers to rows [r, r + nr) of w; missing rows repeat the last one
// (computed and discarded) so the tiles have no row branches.
template <class T>
HWY_INLINE void RowPointers(const WeightMatrix& w, size_t r, size_t nr, const T* (&p)[kW]) {
  for (size_t j = 0; j < kW; ++j)
    p[j] = reinterpret_cast<const T*>(w.row_ptr(static_cast<int64_t>(r + std::min(j, nr - 1))));
}

// s + sum of w[e] * x[e] for e in [from, k): the elements past the last full
// vector, one shared function so every tile size rounds them alike.
float TailDot(float s, const void* w, DType t, const float* x, size_t from, size_t k) {
  for (size_t e = from; e < k; ++e) s += load_as_f32(w, t, e) * x[e];
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
// vector fill the 16 registers of AVX2) times kW weight rows.
template <size_t R, class Rows>
HWY_INLINE void TileFloat(const typename Rows::T* const (&p)[kW], const float* x, size_t ldx, size_t k, float* y,
                          size_t ldy, size_t nr) {
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
    for (size_t j = 0; j < nr; ++j) y[row * ldy + j] = TailDot(s[j], p[j], Rows::kType, xr, i, k);
  };
  finish(0, x0, a00, a01, a02, a03);
  if constexpr (R > 1) finish(1, x1, a10, a11, a12, a13);
  if constexpr (R > 2) finish(2, x2, a20, a21, a22, a23);
}

// s[j][g] = scale of block b0 + g of weight row j times the activation's scale
// of that block, for g < count (count <= Lanes(DF)).
HWY_INLINE void BlockScales(const uint16_t* const (&sc)[kW], const float* d, size_t b0, size_t count,
                            float (*s)[HWY_MAX_BYTES / sizeof(float)]) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  if (count == hn::Lanes(df)) {
    const auto dx = hn::LoadU(df, d + b0);
    for (size_t j = 0; j < kW; ++j)
      hn::StoreU(hn::Mul(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(sc[j] + b0))), dx), df,
                 s[j]);
    return;
  }
  for (size_t j = 0; j < kW; ++j)
    for (size_t g = 0; g < count; ++g) s[j][g] = f16_to_f32(sc[j][b0 + g]) * d[b0 + g];
}

// One quantized activation row times kW rows of Q8 or Q4 weights: per 32-block
// an exact integer dot product (int16 x int16 -> int32 pairs), converted and
// scaled into a float accumulator.
template <QuantFormat kFormat>
HWY_INLINE void TileQuant(const WeightMatrix& w, size_t r, size_t nr, const Activations& a, size_t i0, float* y) {
  const DF df;
  const D16 d16;
  const D32 d32;
  const DF32 df32;
  const size_t N16 = hn::Lanes(d16), N32 = hn::Lanes(d32), G = hn::Lanes(df);
  const size_t k = static_cast<size_t>(w.cols), blocks = k / kQuantBlock;
  const size_t block_bytes = quant_row_bytes(kFormat, kQuantBlock);
  const int16_t* xrow = a.q + i0 * k;
  const float* drow = a.d + i0 * blocks;
  const uint8_t* p[kW];
  RowPointers(w, r, nr, p);
  const uint16_t* sc[kW];
  for (size_t j = 0; j < kW; ++j) sc[j] = w.row_scales(static_cast<int64_t>(r + std::min(j, nr - 1)));
  auto f0 = hn::Zero(df32), f1 = hn::Zero(df32), f2 = hn::Zero(df32), f3 = hn::Zero(df32);
  HWY_ALIGN float s[kW][HWY_MAX_BYTES / sizeof(float)];
  for (size_t b0 = 0; b0 < blocks; b0 += G) {
    const size_t count = std::min(G, blocks - b0);
    BlockScales(sc, drow, b0, count, s);
    for (size_t g = 0; g < count; ++g) {
      const size_t b = b0 + g;
      const int16_t* xq = xrow + b * kQuantBlock;
      if (b % (64 / block_bytes) == 0)  // once per cache line
        for (size_t j = 0; j < kW; ++j) hwy::Prefetch(p[j] + b * block_bytes + kPrefetchBytes);
      auto i0v = hn::Zero(d32), i1v = hn::Zero(d32), i2v = hn::Zero(d32), i3v = hn::Zero(d32);
      auto j0v = hn::Zero(d32), j1v = hn::Zero(d32), j2v = hn::Zero(d32), j3v = hn::Zero(d32);
      if constexpr (kFormat == QuantFormat::Q8) {
        const hn::Rebind<int8_t, D16> d8;
        for (size_t off = 0; off < kQuantBlock; off += N16) {
          const auto xv = hn::LoadU(d16, xq + off);
          const size_t at = b * block_bytes + off;
          auto step = [&](const uint8_t* row, hn::Vec<D32>& acc, hn::Vec<D32>& acc1) {
            const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(row + at)));
            acc = hn::ReorderWidenMulAccumulate(d32, wv, xv, acc, acc1);
          };
          step(p[0], i0v, j0v);
          step(p[1], i1v, j1v);
          step(p[2], i2v, j2v);
          step(p[3], i3v, j3v);
        }
      } else {
        // Nibbles hold q + 8: start from -8 * sum(x) and add nibble . x.
        const hn::Rebind<uint8_t, D16> d8;
        i0v = i1v = i2v = i3v = hn::LoadU(d32, a.q4_bias + (i0 * blocks + b) * N32);
        const auto low = hn::Set(d16, int16_t{15});
        for (size_t off = 0; off < kQuantBlock / 2; off += N16) {
          const auto xlo = hn::LoadU(d16, xq + off), xhi = hn::LoadU(d16, xq + kQuantBlock / 2 + off);
          const size_t at = b * block_bytes + off;
          auto step = [&](const uint8_t* row, hn::Vec<D32>& acc, hn::Vec<D32>& acc1) {
            const auto bytes = hn::BitCast(d16, hn::PromoteTo(hn::Rebind<uint16_t, D16>(), hn::LoadU(d8, row + at)));
            acc = hn::ReorderWidenMulAccumulate(d32, hn::And(bytes, low), xlo, acc, acc1);
            acc = hn::ReorderWidenMulAccumulate(d32, hn::ShiftRight<4>(bytes), xhi, acc, acc1);
          };
          step(p[0], i0v, j0v);
          step(p[1], i1v, j1v);
          step(p[2], i2v, j2v);
          step(p[3], i3v, j3v);
        }
      }
      f0 = hn::MulAdd(hn::ConvertTo(df32, hn::Add(i0v, j0v)), hn::Set(df32, s[0][g]), f0);
      f1 = hn::MulAdd(hn::ConvertTo(df32, hn::Add(i1v, j1v)), hn::Set(df32, s[1][g]), f1);
      f2 = hn::MulAdd(hn::ConvertTo(df32, hn::Add(i2v, j2v)), hn::Set(df32, s[2][g]), f2);
      f3 = hn::MulAdd(hn::ConvertTo(df32, hn::Add(i3v, j3v)), hn::Set(df32, s[3][g]), f3);
    }
  }
  const float sums[kW] = {Sum(df32, f0), Sum(df32, f1), Sum(df32, f2), Sum(df32, f3)};
  for (size_t j = 0; j < nr; ++j) y[j] = sums[j];
}

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
      if (rows == 3) TileFloat<3, Rows>(p, x + i * ldx, ldx, k, yt, ldy, nr);
      else if (rows == 2) TileFloat<2, Rows>(p, x + i * ldx, ldx, k, yt, ldy, nr);
      else TileFloat<1, Rows>(p, x + i * ldx, ldx, k, yt, ldy, nr);
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

// One tile of `rows` (<= TileRows) activation rows starting at i0 times weight rows [r, r + nr).
template <size_t R>
HWY_INLINE void TileOf(const WeightMatrix& w, const Activations& a, size_t i0, size_t r, size_t nr, float* y,
                       size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols);
  switch (w.format) {
    case WeightFormat::F32: {
      const float* p[kW];
      RowPointers(w, r, nr, p);
      return TileFloat<R, F32Rows>(p, a.x + i0 * k, k, k, y, ldy, nr);
    }
    case WeightFormat::F16: {
      const hwy::float16_t* p[kW];
      RowPointers(w, r, nr, p);
      return TileFloat<R, F16Rows>(p, a.x + i0 * k, k, k, y, ldy, nr);
    }
    case WeightFormat::BF16: {
      const hwy::bfloat16_t* p[kW];
      RowPointers(w, r, nr, p);
      return TileFloat<R, BF16Rows>(p, a.x + i0 * k, k, k, y, ldy, nr);
    }
    case WeightFormat::Q8:
      if constexpr (R == 1) return TileQuant<QuantFormat::Q8>(w, r, nr, a, i0, y);
      break;
    case WeightFormat::Q4:
      if constexpr (R == 1) return TileQuant<QuantFormat::Q4>(w, r, nr, a, i0, y);
      break;
  }
  HWY_ASSERT(false);  // more rows than the format's tile: TileRows is the contract
}

// Activation tiles outside, weight rows inside: the tile's rows stay in L1
// while the caller's group of weight rows (sized for L2) streams past.
void DotRows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
             size_t ldy) {
  const size_t R = TileRows(w.format);
  for (size_t i = 0; i < ni; i += R) {
    const size_t rows = std::min(R, ni - i);
    for (size_t r = r0; r < r1; r += kW) {
      const size_t nr = std::min(kW, r1 - r);
      float* yt = y + i * ldy + (r - r0);
      if (rows == 3) TileOf<3>(w, a, i0 + i, r, nr, yt, ldy);
      else if (rows == 2) TileOf<2>(w, a, i0 + i, r, nr, yt, ldy);
      else TileOf<1>(w, a, i0 + i, r, nr, yt, ldy);
    }
  }
}

void WidenRows(const WeightMatrix& w, size_t r0, size_t r1, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df), k = static_cast<size_t>(w.cols);
  for (size_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row_ptr(static_cast<int64_t>(r));
    float* o = out + (r - r0) * k;
    size_t i = 0;
    switch (w.format) {
      case WeightFormat::F32:
        std::memcpy(o, row, k * sizeof(float));
        break;
      case WeightFormat::BF16: {
        const hn::Rebind<hwy::bfloat16_t, DF> db;
        for (; i + N <= k; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(row) + i)), df, o + i);
        for (; i < k; ++i) o[i] = load_as_f32(row, DType::BF16, i);
        break;
      }
      case WeightFormat::F16: {
        const hn::Rebind<hwy::float16_t, DF> dh;
        for (; i + N <= k; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + i)), df, o + i);
        for (; i < k; ++i) o[i] = load_as_f32(row, DType::F16, i);
        break;
      }
      case WeightFormat::Q8:
      case WeightFormat::Q4:
        dequantize_row(w.quant_format(), row, w.row_scales(static_cast<int64_t>(r)), w.cols, o);
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
HWY_EXPORT(BiasLanes);
HWY_EXPORT(Q4Bias);
HWY_EXPORT(TileRows);
HWY_EXPORT(DotRows);
HWY_EXPORT(WidenRows);
HWY_EXPORT(AttentionScores);
HWY_EXPORT(AttentionValues);

void quantize_activation(const float* x, size_t n, size_t k, int16_t* q, float* d) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivation)(x, n, k, q, d);
}
size_t bias_lanes() { return HWY_DYNAMIC_DISPATCH(BiasLanes)(); }
void q4_bias(const int16_t* q, size_t n, size_t k, int32_t* bias) { HWY_DYNAMIC_DISPATCH(Q4Bias)(q, n, k, bias); }
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
