// quantize_row (quant.h), vectorized: the scalar definition's operations in
// the same order (the value of largest magnitude, its first occurrence when
// two tie; the half scale and its IEEE reciprocal; a multiply, round to
// nearest even and clamp per weight), so every target writes the reference's
// bytes. Loading a float checkpoint as Q8/Q4 is mostly this. Highway kernels
// with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quant_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/quant.h"
#include "util/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace qinfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

bool QuantizeRow(QuantFormat f, const float* x, size_t n, uint8_t* codes, uint16_t* scales) {
  const hn::CappedTag<float, kQuantBlock> df;  // a block is a whole number of vectors
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t N = hn::Lanes(df);
  const bool q8 = f == QuantFormat::Q8;
  const auto lo = hn::Set(df, q8 ? -127.0f : -8.0f), hi = hn::Set(df, q8 ? 127.0f : 7.0f);
  const auto zero = hn::Set(di, quant_zero_code(f));
  bool all_finite = true;
  for (size_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    uint8_t* cb = codes + b * kQuantBlock;
    auto vmax = hn::Zero(df);
    auto finite = hn::IsFinite(hn::LoadU(df, xb));
    for (size_t e = 0; e < kQuantBlock; e += N) {
      const auto v = hn::LoadU(df, xb + e);
      vmax = hn::Max(vmax, hn::Abs(v));
      finite = hn::And(finite, hn::IsFinite(v));
    }
    if (!hn::AllTrue(df, finite)) {  // corrupt weights, refused by the loader: the definition's codes
      quantize_row_reference(f, xb, kQuantBlock, cb, scales + b);
      all_finite = false;
      continue;
    }
    const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
    float m = 0;  // the first value of magnitude amax, with its sign; +0 for a block of zeros
    if (amax > 0)
      for (size_t e = 0; e < kQuantBlock; e += N) {
        const intptr_t at = hn::FindFirstTrue(df, hn::Eq(hn::Abs(hn::LoadU(df, xb + e)), hn::Set(df, amax)));
        if (at >= 0) {
          m = xb[e + static_cast<size_t>(at)];
          break;
        }
      }
    scales[b] = f32_to_f16(q8 ? amax / 127.0f : m / -8.0f);
    const float d = f16_to_f32(scales[b]);
    const auto inv = hn::Set(df, d != 0 ? 1.0f / d : 0.0f);
    for (size_t e = 0; e < kQuantBlock; e += N) {
      const auto q = hn::Min(hn::Max(hn::Round(hn::Mul(hn::LoadU(df, xb + e), inv)), lo), hi);
      hn::StoreU(hn::DemoteTo(du8, hn::Add(hn::ConvertTo(di, q), zero)), du8, cb + e);
    }
  }
  return all_finite;
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::kernels {
HWY_EXPORT(QuantizeRow);
}  // namespace qinfer::kernels

namespace qinfer {
bool quantize_row(QuantFormat f, const float* x, int64_t n, uint8_t* codes, uint16_t* scales) {
  using namespace kernels;
  return HWY_DYNAMIC_DISPATCH(QuantizeRow)(f, x, static_cast<size_t>(n), codes, scales);
}
}  // namespace qinfer
#endif
