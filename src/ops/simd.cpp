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
  } else if (t == DType::F16) {
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

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::simd {
HWY_EXPORT(WidenF32);
HWY_EXPORT(Dot);
HWY_EXPORT(Axpy);

void widen_f32(const void* src, DType t, size_t n, float* dst) { HWY_DYNAMIC_DISPATCH(WidenF32)(src, t, n, dst); }
float dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(Dot)(a, b, n); }
void axpy(float a, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(Axpy)(a, x, y, n); }
}  // namespace qinfer::simd
#endif
