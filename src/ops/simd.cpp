// Highway kernels with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/simd.h"

HWY_BEFORE_NAMESPACE();
namespace qinfer::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void WidenF32(const void* src, DType t, size_t n, float* dst) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (t == DType::F32) {
    const float* s = static_cast<const float*>(src);
    for (; i + N <= n; i += N) hn::StoreU(hn::LoadU(df, s + i), df, dst + i);
  } else if (t == DType::BF16) {
    const hn::Rebind<hwy::bfloat16_t, decltype(df)> dbf;
    const auto* s = static_cast<const hwy::bfloat16_t*>(src);
    for (; i + N <= n; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dbf, s + i)), df, dst + i);
  } else {
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const auto* s = static_cast<const hwy::float16_t*>(src);
    for (; i + N <= n; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, s + i)), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = load_as_f32(src, t, i);
}

float Dot(const float* a, const float* b, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + N), hn::LoadU(df, b + i + N), s1);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void Axpy(float a, const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto va = hn::Set(df, a);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(va, hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, y + i);
  for (; i < n; ++i) y[i] += a * x[i];
}

// One x row against up to 4 w rows.
HWY_INLINE void Tile1x4(const float* x, const float* w, size_t nw, size_t ldw, size_t k, float* y) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const float* w0 = w;
  const float* w1 = nw > 1 ? w + ldw : w;
  const float* w2 = nw > 2 ? w + 2 * ldw : w;
  const float* w3 = nw > 3 ? w + 3 * ldw : w;
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= k; i += N) {
    const auto xv = hn::LoadU(df, x + i);
    a0 = hn::MulAdd(xv, hn::LoadU(df, w0 + i), a0);
    a1 = hn::MulAdd(xv, hn::LoadU(df, w1 + i), a1);
    a2 = hn::MulAdd(xv, hn::LoadU(df, w2 + i), a2);
    a3 = hn::MulAdd(xv, hn::LoadU(df, w3 + i), a3);
  }
  float s[4] = {hn::GetLane(hn::SumOfLanes(df, a0)), hn::GetLane(hn::SumOfLanes(df, a1)),
                hn::GetLane(hn::SumOfLanes(df, a2)), hn::GetLane(hn::SumOfLanes(df, a3))};
  const float* ws[4] = {w0, w1, w2, w3};
  for (; i < k; ++i)
    for (int j = 0; j < 4; ++j) s[j] += x[i] * ws[j][i];
  for (size_t j = 0; j < nw; ++j) y[j] = s[j];
}

// Two x rows against exactly 4 w rows: 8 accumulators, 6 loads per 8 FMAs.
HWY_INLINE void Tile2x4(const float* x0, const float* x1, const float* w, size_t ldw, size_t k, float* y0,
                        float* y1) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  auto b0 = hn::Zero(df), b1 = hn::Zero(df), b2 = hn::Zero(df), b3 = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= k; i += N) {
    const auto u = hn::LoadU(df, x0 + i), v = hn::LoadU(df, x1 + i);
    const auto c0 = hn::LoadU(df, w0 + i), c1 = hn::LoadU(df, w1 + i);
    a0 = hn::MulAdd(u, c0, a0);
    b0 = hn::MulAdd(v, c0, b0);
    a1 = hn::MulAdd(u, c1, a1);
    b1 = hn::MulAdd(v, c1, b1);
    const auto c2 = hn::LoadU(df, w2 + i), c3 = hn::LoadU(df, w3 + i);
    a2 = hn::MulAdd(u, c2, a2);
    b2 = hn::MulAdd(v, c2, b2);
    a3 = hn::MulAdd(u, c3, a3);
    b3 = hn::MulAdd(v, c3, b3);
  }
  float s[8] = {hn::GetLane(hn::SumOfLanes(df, a0)), hn::GetLane(hn::SumOfLanes(df, a1)),
                hn::GetLane(hn::SumOfLanes(df, a2)), hn::GetLane(hn::SumOfLanes(df, a3)),
                hn::GetLane(hn::SumOfLanes(df, b0)), hn::GetLane(hn::SumOfLanes(df, b1)),
                hn::GetLane(hn::SumOfLanes(df, b2)), hn::GetLane(hn::SumOfLanes(df, b3))};
  for (; i < k; ++i) {
    for (int j = 0; j < 4; ++j) {
      s[j] += x0[i] * w[j * ldw + i];
      s[4 + j] += x1[i] * w[j * ldw + i];
    }
  }
  for (int j = 0; j < 4; ++j) {
    y0[j] = s[j];
    y1[j] = s[4 + j];
  }
}

void DotTile(const float* x, size_t nx, size_t ldx, const float* w, size_t nw, size_t ldw, size_t k, float* y,
             size_t ldy) {
  size_t i = 0;
  if (nw == 4)
    for (; i + 2 <= nx; i += 2) Tile2x4(x + i * ldx, x + (i + 1) * ldx, w, ldw, k, y + i * ldy, y + (i + 1) * ldy);
  for (; i < nx; ++i) Tile1x4(x + i * ldx, w, nw, ldw, k, y + i * ldy);
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::simd {
HWY_EXPORT(WidenF32);
HWY_EXPORT(Dot);
HWY_EXPORT(Axpy);
HWY_EXPORT(DotTile);

void widen_f32(const void* src, DType t, size_t n, float* dst) { HWY_DYNAMIC_DISPATCH(WidenF32)(src, t, n, dst); }
float dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(Dot)(a, b, n); }
void axpy(float a, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(Axpy)(a, x, y, n); }
void dot_tile(const float* x, size_t nx, size_t ldx, const float* w, size_t nw, size_t ldw, size_t k, float* y,
              size_t ldy) {
  HWY_DYNAMIC_DISPATCH(DotTile)(x, nx, ldx, w, nw, ldw, k, y, ldy);
}
}  // namespace qinfer::simd
#endif
