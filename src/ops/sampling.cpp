// Highway kernels with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/sampling.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>

#include "ops/sampling.h"

HWY_BEFORE_NAMESPACE();
namespace qinfer::sampling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x[i] = NaN ? -inf : min(x[i], FLT_MAX); returns the largest.
float SanitizeMax(float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  const auto largest = hn::Set(d, FLT_MAX);
  auto max0 = neg_inf, max1 = neg_inf;
  size_t i = 0;
  auto sanitize = [&](size_t at) {
    auto v = hn::LoadU(d, x + at);
    v = hn::IfThenElse(hn::IsNaN(v), neg_inf, hn::Min(v, largest));
    hn::StoreU(v, d, x + at);
    return v;
  };
  for (; i + 2 * N <= n; i += 2 * N) {
    max0 = hn::Max(max0, sanitize(i));
    max1 = hn::Max(max1, sanitize(i + N));
  }
  float max = hn::GetLane(hn::MaxOfLanes(d, hn::Max(max0, max1)));
  for (; i < n; ++i) {
    x[i] = std::isnan(x[i]) ? -std::numeric_limits<float>::infinity() : std::min(x[i], FLT_MAX);
    max = std::max(max, x[i]);
  }
  return max;
}

// The first i in [begin, n) with x[i] >= threshold, or n.
size_t FindFirstAtLeast(const float* x, size_t begin, size_t n, float threshold) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto t = hn::Set(d, threshold);
  size_t i = begin;
  for (; i + N <= n; i += N) {
    intptr_t lane = hn::FindFirstTrue(d, hn::Ge(hn::LoadU(d, x + i), t));
    if (lane >= 0) return i + size_t(lane);
  }
  for (; i < n; ++i)
    if (x[i] >= threshold) return i;
  return n;
}

// out[i] = min(exp((x[i] - max) / temperature), 1), x may be out; returns
// whether some out[i] is 0 (-inf logits, underflow).
bool ExpWeights(const float* x, size_t n, float max, float temperature, float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vmax = hn::Set(d, max), vt = hn::Set(d, temperature);
  const auto zero = hn::Zero(d), one = hn::Set(d, 1.0f);
  auto zeros_seen = hn::Zero(d);
  size_t i = 0;
  // The min guards the invariant weight <= 1 against rounding of exp(0).
  for (; i + N <= n; i += N) {
    auto w = hn::Min(hn::Exp(d, hn::Div(hn::Sub(hn::LoadU(d, x + i), vmax), vt)), one);
    zeros_seen = hn::Or(zeros_seen, hn::VecFromMask(d, hn::Eq(w, zero)));
    hn::StoreU(w, d, out + i);
  }
  bool any_zero = !hn::AllFalse(d, hn::MaskFromVec(zeros_seen));
  for (; i < n; ++i) {
    out[i] = std::min(std::exp((x[i] - max) / temperature), 1.0f);
    any_zero |= out[i] == 0;
  }
  return any_zero;
}

// Sum of the w[i] >= threshold, accumulated in double.
double MassAtLeast(const float* w, size_t n, float threshold) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const size_t N = hn::Lanes(dd);
  const auto t = hn::Set(df, threshold);
  auto sum0 = hn::Zero(dd), sum1 = hn::Zero(dd);
  auto masked = [&](size_t at) {
    auto v = hn::LoadU(df, w + at);
    return hn::PromoteTo(dd, hn::IfThenElseZero(hn::Ge(v, t), v));
  };
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    sum0 = hn::Add(sum0, masked(i));
    sum1 = hn::Add(sum1, masked(i + N));
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(sum0, sum1)));
  for (; i < n; ++i)
    if (w[i] >= threshold) sum += w[i];
  return sum;
}

// Moves the pairs (ids[i], w[i]) with w[i] >= threshold to the front, in
// order; returns how many there are. (Highway 1.0.3's Compress copies a
// 1 KiB table per call, so the lanes are moved one by one from a bit mask;
// vectors kept whole, the common case, are moved whole.)
size_t KeepAtLeast(int32_t* ids, float* w, size_t n, float threshold) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(df);
  static_assert(hn::MaxLanes(df) <= 64, "mask bits must fit a uint64_t");
  const uint64_t all_lanes = N == 64 ? ~uint64_t{0} : (uint64_t{1} << N) - 1;
  const auto t = hn::Set(df, threshold);
  size_t kept = 0, i = 0;
  // kept <= i: every write lands on a lane already read.
  for (; i + N <= n; i += N) {
    const auto vw = hn::LoadU(df, w + i);
    uint8_t mask_bytes[8] = {};
    hn::StoreMaskBits(df, hn::Ge(vw, t), mask_bytes);
    uint64_t bits = 0;
    for (size_t b = 0; b < (N + 7) / 8; ++b) bits |= uint64_t{mask_bytes[b]} << (8 * b);
    if (bits == all_lanes) {
      if (kept != i) {
        hn::StoreU(hn::LoadU(di, ids + i), di, ids + kept);
        hn::StoreU(vw, df, w + kept);
      }
      kept += N;
      continue;
    }
    for (; bits != 0; bits &= bits - 1) {
      size_t lane = size_t(std::countr_zero(bits));
      ids[kept] = ids[i + lane];
      w[kept++] = w[i + lane];
    }
  }
  for (; i < n; ++i) {
    if (w[i] >= threshold) {
      ids[kept] = ids[i];
      w[kept++] = w[i];
    }
  }
  return kept;
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::sampling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::sampling {
HWY_EXPORT(SanitizeMax);
HWY_EXPORT(FindFirstAtLeast);
HWY_EXPORT(ExpWeights);
HWY_EXPORT(MassAtLeast);
HWY_EXPORT(KeepAtLeast);

float sanitize_max(std::span<float> x) { return HWY_DYNAMIC_DISPATCH(SanitizeMax)(x.data(), x.size()); }

size_t find_first_at_least(std::span<const float> x, size_t begin, float threshold) {
  return HWY_DYNAMIC_DISPATCH(FindFirstAtLeast)(x.data(), begin, x.size(), threshold);
}

bool exp_weights(std::span<const float> x, float max, float temperature, float* out) {
  return HWY_DYNAMIC_DISPATCH(ExpWeights)(x.data(), x.size(), max, temperature, out);
}

double mass_at_least(std::span<const float> w, float threshold) {
  return HWY_DYNAMIC_DISPATCH(MassAtLeast)(w.data(), w.size(), threshold);
}

size_t keep_at_least(std::span<int32_t> ids, std::span<float> w, float threshold) {
  return HWY_DYNAMIC_DISPATCH(KeepAtLeast)(ids.data(), w.data(), w.size(), threshold);
}

}  // namespace qinfer::sampling
#endif  // HWY_ONCE
