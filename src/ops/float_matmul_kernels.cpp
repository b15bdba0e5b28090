// Float weights (F32, F16, BF16) times f32 activation rows: the sums of
// float_dot (matmul.h). Highway kernels with dynamic dispatch: this file is
// compiled once per target.
//
// The weights are panels (matmul.h): at each k a panel holds its 32 rows side
// by side, so weight rows sit in the vector lanes and every output is its own
// chain of fused multiply-adds along k, block by block. Decode streams a
// panel and broadcasts the activation at each k. Prefill widens a panel to f32
// once and passes every tile of activation rows over it, outer-product style
// as BLAS kernels do: at each k a tile loads its weight vectors once and adds
// each row's broadcast activation times them to R x kTileVectors accumulators.
// Both do the same operations per output, so a row's result never depends on
// the number of rows in the call.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/float_matmul_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <cstring>

#include "ops/keep_in_register-inl.h"
#include "ops/matmul_kernels.h"
#include "ops/simd.h"
#include "ops/with_rows.h"

HWY_BEFORE_NAMESPACE();
namespace qinfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Weight vectors and activation rows of a prefill tile: R x 2 accumulators, 2
// weight vectors and a broadcast fill 27 of AVX-512's 32 registers, 15 of
// AVX2's 16. A tile covers 2 vectors of a panel's 32 columns.
constexpr size_t kTileVectors = 2;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kPanelTileRows = 12;
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
constexpr size_t kPanelTileRows = 6;
#else
constexpr size_t kPanelTileRows = 4;
#endif
constexpr size_t kP = static_cast<size_t>(kFloatPanelRows);

// Decode fetches the panel stream this far ahead.
constexpr size_t kPrefetchBytes = 4096;

// Loads a vector of weights as f32.
template <class T>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const T* p) {
  if constexpr (std::is_same_v<T, float>)
    return hn::LoadU(df, p);
  else
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<T, DF>(), p));
}

// total[r * C + j] for r < R, j < C (kTileVectors vectors' lanes): float_dot of
// activation row r, xp[e * R + r], with panel column j, panel[e * kFloatPanelRows + j],
// over k in [0, n), block by block. A 16-bit panel is read as stored (one
// tile of rows streams it from memory as decode does, prefetching ahead),
// an f32 one (or one widened once for several tiles) as it is.
template <size_t R, class T>
HWY_NOINLINE void PanelTile(const T* HWY_RESTRICT panel, const float* HWY_RESTRICT xp, size_t n,
                            float* HWY_RESTRICT total) {
  const DF df;
  const size_t N = hn::Lanes(df), C = kTileVectors * N;
  for (size_t b = 0; b < n; b += kFloatDotBlock) {
    hn::Vec<DF> acc[R][kTileVectors];
#pragma GCC unroll 16
    for (size_t r = 0; r < R; ++r)
      for (size_t c = 0; c < kTileVectors; ++c) acc[r][c] = hn::Zero(df);
    const size_t end = std::min(n, b + kFloatDotBlock);
    for (size_t e = b; e < end; ++e) {
      if constexpr (!std::is_same_v<T, float>)
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(panel + e * kFloatPanelRows) + kPrefetchBytes);
      hn::Vec<DF> w[kTileVectors];
      for (size_t c = 0; c < kTileVectors; ++c) {
        w[c] = LoadWeights(df, panel + e * kFloatPanelRows + c * N);
        KeepInRegister(w[c]);
      }
#pragma GCC unroll 16
      for (size_t r = 0; r < R; ++r) {
        auto x = hn::Set(df, xp[e * R + r]);
        KeepInRegister(x);
        for (size_t c = 0; c < kTileVectors; ++c) acc[r][c] = hn::MulAdd(x, w[c], acc[r][c]);
      }
    }
    const bool assign = b == 0;
#pragma GCC unroll 16
    for (size_t r = 0; r < R; ++r)
      for (size_t c = 0; c < kTileVectors; ++c) {
        float* t = total + r * C + c * N;
        hn::Store(assign ? acc[r][c] : hn::Add(hn::Load(df, t), acc[r][c]), df, t);
      }
  }
}

// ---------------------------------------------------------------- bf16 products

// The pairs of a bf16 panel as vdpbf16ps takes them: dword m * kP + j holds
// row j's columns 2m (low half) and 2m+1 (high half). (Subnormals stay: the
// instruction reads them as zeros, and PairRows has the other targets do so.)
void PairPanel(const uint16_t* HWY_RESTRICT panel, size_t k, uint32_t* HWY_RESTRICT out) {
  size_t j0 = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint16_t> d16;
  const hn::Full128<uint32_t> d32;
  for (size_t m = 0; m < k / 2; ++m)
    for (size_t j = 0; j < kP; j += 8) {  // 8 rows: their two columns interleaved
      const auto even = hn::LoadU(d16, panel + 2 * m * kP + j), odd = hn::LoadU(d16, panel + (2 * m + 1) * kP + j);
      hn::StoreU(hn::BitCast(d32, hn::InterleaveLower(d16, even, odd)), d32, out + m * kP + j);
      hn::StoreU(hn::BitCast(d32, hn::InterleaveUpper(d16, even, odd)), d32, out + m * kP + j + 4);
    }
  j0 = kP;
#endif
  for (size_t m = 0; m < k / 2; ++m)
    for (size_t j = j0; j < kP; ++j)
      out[m * kP + j] = panel[2 * m * kP + j] | static_cast<uint32_t>(panel[(2 * m + 1) * kP + j]) << 16;
}

// The bf16 halves of pair vectors as f32: column 2m+1 (high) and 2m (low).
template <class V>
HWY_INLINE hn::Vec<DF> HighHalf(V v) {
  return hn::BitCast(DF(), hn::And(v, hn::Set(hn::RebindToUnsigned<DF>(), 0xffff0000u)));
}
template <class V>
HWY_INLINE hn::Vec<DF> LowHalf(V v) {
  return hn::BitCast(DF(), hn::ShiftLeft<16>(v));
}
HWY_INLINE float HighHalf(uint32_t v) {
  float f;
  v &= 0xffff0000u;
  std::memcpy(&f, &v, 4);
  return f;
}
HWY_INLINE float LowHalf(uint32_t v) { return HighHalf(v << 16); }

// PanelTile for bf16 products (bf16_pair_dot): activation pairs xp[m * R + r]
// against the pair panel, each pair two multiply-adds, the high halves first.
template <size_t R>
HWY_NOINLINE void PairTile(const uint32_t* HWY_RESTRICT pairs, const uint32_t* HWY_RESTRICT xp, size_t n,
                           float* HWY_RESTRICT total) {
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df), C = kTileVectors * N;
  for (size_t b = 0; b < n; b += kFloatDotBlock) {
    hn::Vec<DF> acc[R][kTileVectors];
    for (size_t r = 0; r < R; ++r)
      for (size_t c = 0; c < kTileVectors; ++c) acc[r][c] = hn::Zero(df);
    for (size_t m = b / 2; m < std::min(n, b + kFloatDotBlock) / 2; ++m) {
      hn::Vec<DF> hi[kTileVectors], lo[kTileVectors];
      for (size_t c = 0; c < kTileVectors; ++c) {
        const auto w = hn::LoadU(du, pairs + m * kP + c * N);
        hi[c] = HighHalf(w);
        lo[c] = LowHalf(w);
      }
      for (size_t r = 0; r < R; ++r) {
        const uint32_t x = xp[m * R + r];
        const auto xh = hn::Set(df, HighHalf(x)), xl = hn::Set(df, LowHalf(x));
        for (size_t c = 0; c < kTileVectors; ++c) acc[r][c] = hn::MulAdd(xl, lo[c], hn::MulAdd(xh, hi[c], acc[r][c]));
      }
    }
    for (size_t r = 0; r < R; ++r)
      for (size_t c = 0; c < kTileVectors; ++c) {
        float* t = total + r * C + c * N;
        hn::Store(b == 0 ? acc[r][c] : hn::Add(hn::Load(df, t), acc[r][c]), df, t);
      }
  }
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// The same with vdpbf16ps, on CPUs with AVX512-BF16 (16 lanes: a tile is a
// whole panel). clang replaces Highway's pragma target with a function's own,
// so the whole set is named.
#define QINFER_BF16 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16")))
constexpr bool kBf16Instruction = true;
template <size_t R>
HWY_NOINLINE QINFER_BF16 void PairTileBf16(const uint32_t* HWY_RESTRICT pairs, const uint32_t* HWY_RESTRICT xp,
                                           size_t n, float* HWY_RESTRICT total) {
  for (size_t b = 0; b < n; b += kFloatDotBlock) {
    __m512 acc[R][2];
    for (size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (size_t m = b / 2; m < std::min(n, b + kFloatDotBlock) / 2; ++m) {
      const __m512bh w0 = (__m512bh)_mm512_loadu_si512(pairs + m * kP);
      const __m512bh w1 = (__m512bh)_mm512_loadu_si512(pairs + m * kP + 16);
      for (size_t r = 0; r < R; ++r) {
        const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(xp[m * R + r]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, w0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, w1);
      }
    }
    for (size_t r = 0; r < R; ++r)
      for (size_t c = 0; c < 2; ++c) {
        float* t = total + r * kP + c * 16;
        _mm512_store_ps(t, b == 0 ? acc[r][c] : _mm512_add_ps(_mm512_load_ps(t), acc[r][c]));
      }
  }
}
#else
constexpr bool kBf16Instruction = false;
#endif

bool UsesBf16Instruction() { return kBf16Instruction && simd::cpu_has_avx512_bf16(); }

// ---------------------------------------------------------------- decode

// total[j] = float_dot(x, panel row j) for the 32 rows of a panel.
template <class T>
HWY_NOINLINE void DecodePanel(const T* HWY_RESTRICT panel, const float* HWY_RESTRICT x, size_t k,
                              float* HWY_RESTRICT total) {
  const DF df;
  const size_t N = hn::Lanes(df), V = kP / N;
  hn::Vec<DF> sum[kP], acc[kP];  // V of them
  for (size_t b = 0; b < k; b += kFloatDotBlock) {
    for (size_t c = 0; c < V; ++c) acc[c] = hn::Zero(df);
    const size_t end = std::min(k, b + kFloatDotBlock);
    for (size_t e = b; e < end; ++e) {
      const T* w = panel + e * kP;
      for (size_t line = 0; line < kP * sizeof(T); line += 64)  // a column is 1-2 whole cache lines
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(w) + kPrefetchBytes + line);
      const auto xe = hn::Set(df, x[e]);
      for (size_t c = 0; c < V; ++c) acc[c] = hn::MulAdd(xe, LoadWeights(df, w + c * N), acc[c]);
    }
    for (size_t c = 0; c < V; ++c) sum[c] = b == 0 ? acc[c] : hn::Add(sum[c], acc[c]);
  }
  for (size_t c = 0; c < V; ++c) hn::StoreU(sum[c], df, total + c * N);
}

// DecodePanel for bf16 products: two multiply-adds per pair on the panel as
// stored (under PairRows' SubnormalsAsZeros).
HWY_NOINLINE void DecodePairPanel(const hwy::bfloat16_t* HWY_RESTRICT panel, const uint32_t* HWY_RESTRICT xp, size_t k,
                                  float* HWY_RESTRICT total) {
  const DF df;
  const size_t N = hn::Lanes(df), V = kP / N;
  hn::Vec<DF> sum[kP], acc[kP];  // V of them
  for (size_t b = 0; b < k; b += kFloatDotBlock) {
    for (size_t c = 0; c < V; ++c) acc[c] = hn::Zero(df);
    for (size_t m = b / 2; m < std::min(k, b + kFloatDotBlock) / 2; ++m) {
      const hwy::bfloat16_t* w = panel + 2 * m * kP;
      for (size_t line = 0; line < 2 * kP * sizeof(*w); line += 64)
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(w) + kPrefetchBytes + line);
      const auto xh = hn::Set(df, HighHalf(xp[m])), xl = hn::Set(df, LowHalf(xp[m]));
      for (size_t c = 0; c < V; ++c)
        acc[c] = hn::MulAdd(xl, LoadWeights(df, w + c * N), hn::MulAdd(xh, LoadWeights(df, w + kP + c * N), acc[c]));
    }
    for (size_t c = 0; c < V; ++c) sum[c] = b == 0 ? acc[c] : hn::Add(sum[c], acc[c]);
  }
  for (size_t c = 0; c < V; ++c) hn::StoreU(sum[c], df, total + c * N);
}

// ---------------------------------------------------------------- rows

template <class T>
void Rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
          size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols), C = kTileVectors * hn::Lanes(DF());
  const T* base = static_cast<const T*>(w.data);
  HWY_ALIGN float total[kPanelTileRows * kP];
  thread_local hwy::AlignedFreeUniquePtr<float[]> widened;
  thread_local size_t widened_size = 0;
  // Up to kStoredPanelTiles tiles of rows (batched decode, a decode with its
  // draft) read each panel as stored: the first tile streams it from memory,
  // the others find it in L2, and the conversion in registers costs less than
  // a pass through an f32 copy. A long prompt's many tiles share one widened
  // copy (on AVX-512 reading the panel as stored measured no slower there
  // either, 311-313 against 292-306 tok/s pp512; other targets unmeasured).
  constexpr size_t kStoredPanelTiles = 4;
  const bool widen = ni > kStoredPanelTiles * kPanelTileRows && !std::is_same_v<T, float>;
  if (widen && widened_size < k * kP) {
    widened = hwy::AllocateAligned<float>(k * kP);
    widened_size = k * kP;
  }
  for (size_t r = r0; r < r1; r += kP) {
    const T* panel = base + r / kP * k * kP;
    const size_t nr = std::min(kP, r1 - r);  // rows past r1: padding or another caller's
    if (ni == 1) {
      DecodePanel(panel, a.x + i0 * k, k, total);
      std::copy_n(total, nr, y + (r - r0));
      continue;
    }
    // Prefill, batched decode: every tile of activation rows (a.packed:
    // tiles of kPanelTileRows rows) over each kTileVectors-vector stretch of
    // the panel's columns.
    auto tiles = [&](const auto* panel_or_wide) {
      for (size_t i = 0; i < ni; i += kPanelTileRows) {
        const size_t rows = std::min(kPanelTileRows, ni - i);
        const float* xp = a.packed + (i0 + i) * k;
        for (size_t c0 = 0; c0 < nr; c0 += C) {
          with_rows<kPanelTileRows>(rows, [&](auto R) { PanelTile<R()>(panel_or_wide + c0, xp, k, total); });
          const size_t nc = std::min(C, nr - c0);
          for (size_t q = 0; q < rows; ++q) std::copy_n(total + q * C, nc, y + (i + q) * ldy + (r - r0) + c0);
        }
      }
    };
    if (widen) {
      simd::widen_f32(panel, std::is_same_v<T, hwy::float16_t> ? DType::F16 : DType::BF16, k * kP, widened.get());
      tiles(static_cast<const float*>(widened.get()));
    } else {
      tiles(panel);
    }
  }
}

// While it lives, subnormal operands and results of float arithmetic are read
// and given as zeros, as vdpbf16ps does (bf16_pair_dot): x86's MXCSR
// flush-to-zero and denormals-are-zero, AArch64's FPCR.FZ (which does both).
class SubnormalsAsZeros {
 public:
  SubnormalsAsZeros() {
#if HWY_ARCH_X86
    saved_ = _mm_getcsr();
    _mm_setcsr(static_cast<unsigned>(saved_) | _MM_FLUSH_ZERO_ON | _MM_DENORMALS_ZERO_ON);
#elif HWY_ARCH_ARM_A64
    asm volatile("mrs %0, fpcr" : "=r"(saved_));
    asm volatile("msr fpcr, %0" : : "r"(saved_ | uint64_t{1} << 24));
#endif
  }
  ~SubnormalsAsZeros() {
#if HWY_ARCH_X86
    _mm_setcsr(static_cast<unsigned>(saved_));
#elif HWY_ARCH_ARM_A64
    asm volatile("msr fpcr, %0" : : "r"(saved_));
#endif
  }
  SubnormalsAsZeros(const SubnormalsAsZeros&) = delete;
  SubnormalsAsZeros& operator=(const SubnormalsAsZeros&) = delete;

 private:
  uint64_t saved_ = 0;
};

// Rows for bf16-product weights. Decode streams each panel as stored;
// otherwise a panel's pairs are made once and every tile of activation
// pairs passes over them.
void PairRows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
              size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols), C = kTileVectors * hn::Lanes(DF());
  const auto* base = static_cast<const uint16_t*>(w.data);
  const bool instruction = UsesBf16Instruction();
  HWY_ALIGN float total[kPanelTileRows * kP];
  thread_local hwy::AlignedFreeUniquePtr<uint32_t[]> pairs;
  thread_local size_t pairs_size = 0;
  if (ni > 1 && pairs_size < k / 2 * kP) {  // decode reads the panels as stored
    pairs = hwy::AllocateAligned<uint32_t>(k / 2 * kP);
    pairs_size = k / 2 * kP;
  }
  // For the multiply-adds of the targets without the instruction and of decode.
  const SubnormalsAsZeros flush;
  for (size_t r = r0; r < r1; r += kP) {
    const size_t nr = std::min(kP, r1 - r);
    if (ni == 1) {
      DecodePairPanel(reinterpret_cast<const hwy::bfloat16_t*>(base) + r / kP * k * kP, a.pairs + i0 * (k / 2), k,
                      total);
      std::copy_n(total, nr, y + (r - r0));
      continue;
    }
    PairPanel(base + r / kP * k * kP, k, pairs.get());
    for (size_t i = 0; i < ni; i += kPanelTileRows) {
      const size_t rows = std::min(kPanelTileRows, ni - i);
      const uint32_t* xp = a.pairs + (i0 + i) * (k / 2);
      for (size_t c0 = 0; c0 < nr; c0 += C) {
        with_rows<kPanelTileRows>(rows, [&](auto R) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
          if (instruction) return PairTileBf16<R()>(pairs.get() + c0, xp, k, total);
#endif
          PairTile<R()>(pairs.get() + c0, xp, k, total);
        });
        const size_t nc = std::min(C, nr - c0);
        for (size_t q = 0; q < rows; ++q) std::copy_n(total + q * C, nc, y + (i + q) * ldy + (r - r0) + c0);
      }
    }
  }
  (void)instruction;
}

void FloatDotRows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
                  size_t ldy) {
  switch (w.format) {
    case WeightFormat::F32:
      return Rows<float>(w, a, i0, ni, r0, r1, y, ldy);
    case WeightFormat::F16:
      return Rows<hwy::float16_t>(w, a, i0, ni, r0, r1, y, ldy);
    case WeightFormat::BF16:
      if (w.bf16_products) return PairRows(w, a, i0, ni, r0, r1, y, ldy);
      return Rows<hwy::bfloat16_t>(w, a, i0, ni, r0, r1, y, ldy);
    case WeightFormat::Q8:
    case WeightFormat::Q4:
      break;
  }
  HWY_ASSERT(false);
}

// Rows [i0, i1) of x [n, k] into tiles of kPanelTileRows rows (the last may
// be shorter), each [k][rows]: out + (tile's first row) * k, as Rows reads them.
void PackActivation(const float* x, size_t n, size_t k, size_t i0, size_t i1, float* out) {
  for (size_t t = i0; t < i1; t += kPanelTileRows) {
    const size_t rows = std::min(kPanelTileRows, n - t);
    float* o = out + t * k;
    for (size_t e = 0; e < k; ++e)
      for (size_t q = 0; q < rows; ++q) o[e * rows + q] = x[(t + q) * k + e];
  }
}

// PackActivation for bf16-product weights: pairs of bf16 operands.
void PackBf16Pairs(const float* x, size_t n, size_t k, size_t i0, size_t i1, uint32_t* out) {
  for (size_t t = i0; t < i1; t += kPanelTileRows) {
    const size_t rows = std::min(kPanelTileRows, n - t);
    uint32_t* o = out + t * (k / 2);
    for (size_t m = 0; m < k / 2; ++m)
      for (size_t q = 0; q < rows; ++q) {
        const float* xr = x + (t + q) * k + 2 * m;
        o[m * rows + q] = bf16_operand(xr[0]) | static_cast<uint32_t>(bf16_operand(xr[1])) << 16;
      }
  }
}

const char* Bf16ProductPath() {
  return UsesBf16Instruction() ? "vdpbf16ps (AVX512-BF16)" : "two f32 multiply-adds per pair";
}

#if HWY_TARGET != HWY_SCALAR
// The 8 x 8 block of 16-bit elements at src (rows `stride` apart) transposed
// into dst (columns kP apart): three rounds of interleaves, of
// 16-, 32- and 64-bit lanes, in 128-bit registers.
void Transpose8x8(const uint16_t* src, size_t stride, uint16_t* dst) {
  const hn::Full128<uint16_t> d16;
  const hn::Full128<uint32_t> d32;
  const hn::Full128<uint64_t> d64;
  decltype(hn::Zero(d32)) u[8];
  for (size_t h = 0; h < 2; ++h) {  // rows 0-3, then 4-7
    const uint16_t* s = src + 4 * h * stride;
    const auto r0 = hn::LoadU(d16, s), r1 = hn::LoadU(d16, s + stride);
    const auto r2 = hn::LoadU(d16, s + 2 * stride), r3 = hn::LoadU(d16, s + 3 * stride);
    const auto t0 = hn::BitCast(d32, hn::InterleaveLower(d16, r0, r1));  // rows 0,1 of columns 0-3
    const auto t1 = hn::BitCast(d32, hn::InterleaveUpper(d16, r0, r1));  // ... of columns 4-7
    const auto t2 = hn::BitCast(d32, hn::InterleaveLower(d16, r2, r3));
    const auto t3 = hn::BitCast(d32, hn::InterleaveUpper(d16, r2, r3));
    u[4 * h + 0] = hn::InterleaveLower(d32, t0, t2);  // 4 rows of columns 0, 1
    u[4 * h + 1] = hn::InterleaveUpper(d32, t0, t2);  // ... of columns 2, 3
    u[4 * h + 2] = hn::InterleaveLower(d32, t1, t3);
    u[4 * h + 3] = hn::InterleaveUpper(d32, t1, t3);
  }
  for (size_t q = 0; q < 4; ++q) {
    const auto lo = hn::BitCast(d64, u[q]), hi = hn::BitCast(d64, u[4 + q]);
    hn::StoreU(hn::BitCast(d16, hn::InterleaveLower(d64, lo, hi)), d16, dst + (2 * q) * kP);
    hn::StoreU(hn::BitCast(d16, hn::InterleaveUpper(d64, lo, hi)), d16, dst + (2 * q + 1) * kP);
  }
}

// The same for a 4 x 4 block of 32-bit elements: interleaves of 32- and 64-bit lanes.
void Transpose4x4(const uint32_t* src, size_t stride, uint32_t* dst) {
  const hn::Full128<uint32_t> d32;
  const hn::Full128<uint64_t> d64;
  const auto r0 = hn::LoadU(d32, src), r1 = hn::LoadU(d32, src + stride);
  const auto r2 = hn::LoadU(d32, src + 2 * stride), r3 = hn::LoadU(d32, src + 3 * stride);
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d32, r0, r1)),
             t1 = hn::BitCast(d64, hn::InterleaveUpper(d32, r0, r1));
  const auto t2 = hn::BitCast(d64, hn::InterleaveLower(d32, r2, r3)),
             t3 = hn::BitCast(d64, hn::InterleaveUpper(d32, r2, r3));
  hn::StoreU(hn::BitCast(d32, hn::InterleaveLower(d64, t0, t2)), d32, dst);
  hn::StoreU(hn::BitCast(d32, hn::InterleaveUpper(d64, t0, t2)), d32, dst + kP);
  hn::StoreU(hn::BitCast(d32, hn::InterleaveLower(d64, t1, t3)), d32, dst + 2 * kP);
  hn::StoreU(hn::BitCast(d32, hn::InterleaveUpper(d64, t1, t3)), d32, dst + 3 * kP);
}

void TransposeBlock(const uint16_t* src, size_t stride, uint16_t* dst) { Transpose8x8(src, stride, dst); }
void TransposeBlock(const uint32_t* src, size_t stride, uint32_t* dst) { Transpose4x4(src, stride, dst); }
#endif

// A whole panel (kFloatPanelRows rows, `stride` elements apart, from `rows`)
// into dst [cols][kFloatPanelRows]: square blocks transposed in registers, 64
// columns at a time so the rows read and the columns written stay in L1; the
// columns past the last whole block one by one.
template <class E>
void PackFullPanelOf(const E* rows, size_t stride, size_t cols, E* dst) {
  size_t whole = 0;
#if HWY_TARGET != HWY_SCALAR
  constexpr size_t kBlock = 16 / sizeof(E), kColumns = 64;
  whole = cols / kBlock * kBlock;
  for (size_t c0 = 0; c0 < whole; c0 += kColumns) {
    const size_t c1 = std::min(whole, c0 + kColumns);
    for (size_t j = 0; j < kP; j += kBlock)
      for (size_t c = c0; c < c1; c += kBlock) TransposeBlock(rows + j * stride + c, stride, dst + c * kP + j);
  }
#endif
  for (size_t c = whole; c < cols; ++c)
    for (size_t j = 0; j < kP; ++j) dst[c * kP + j] = rows[j * stride + c];
}

void PackFullPanel(const void* rows, size_t element_bytes, size_t stride, size_t cols, void* dst) {
  if (element_bytes == 4)
    PackFullPanelOf(static_cast<const uint32_t*>(rows), stride, cols, static_cast<uint32_t*>(dst));
  else
    PackFullPanelOf(static_cast<const uint16_t*>(rows), stride, cols, static_cast<uint16_t*>(dst));
}

size_t PanelTileRowsOf() { return kPanelTileRows; }
bool FusedFloatDot() { return HWY_NATIVE_FMA; }

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::kernels {
HWY_EXPORT(FloatDotRows);
HWY_EXPORT(PackActivation);
HWY_EXPORT(PackBf16Pairs);
HWY_EXPORT(Bf16ProductPath);
HWY_EXPORT(PackFullPanel);
HWY_EXPORT(PanelTileRowsOf);
HWY_EXPORT(FusedFloatDot);

void float_dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1, float* y,
                    size_t ldy) {
  HWY_DYNAMIC_DISPATCH(FloatDotRows)(w, a, i0, ni, r0, r1, y, ldy);
}
void pack_activation(const float* x, size_t n, size_t k, size_t i0, size_t i1, float* out) {
  HWY_DYNAMIC_DISPATCH(PackActivation)(x, n, k, i0, i1, out);
}
void pack_bf16_pairs(const float* x, size_t n, size_t k, size_t i0, size_t i1, uint32_t* out) {
  HWY_DYNAMIC_DISPATCH(PackBf16Pairs)(x, n, k, i0, i1, out);
}
const char* bf16_product_path() { return HWY_DYNAMIC_DISPATCH(Bf16ProductPath)(); }
void pack_full_panel(const void* rows, size_t element_bytes, size_t stride, size_t cols, void* dst) {
  HWY_DYNAMIC_DISPATCH(PackFullPanel)(rows, element_bytes, stride, cols, dst);
}
size_t float_tile_rows() { return HWY_DYNAMIC_DISPATCH(PanelTileRowsOf)(); }
bool fused_float_dot() { return HWY_DYNAMIC_DISPATCH(FusedFloatDot)(); }
}  // namespace qinfer::kernels
#endif
