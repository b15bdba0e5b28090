// Highway kernels with dynamic dispatch: this file is compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/matmul_kernels.h"
#include "ops/simd.h"

#if HWY_ARCH_X86
#include <cpuid.h>
#endif

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

// x's values as f32: loaded, or widened exactly from bf16.
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D df, const float* x) {
  return hn::LoadU(df, x);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D df, const hwy::bfloat16_t* x) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, D>(), x));
}
HWY_INLINE float F32Of(float x) { return x; }
HWY_INLINE float F32Of(hwy::bfloat16_t x) { return hwy::F32FromBF16(x); }

// One body for both element types: the same multiply-adds whatever x is stored in.
template <class T>
HWY_INLINE void AxpyOf(float a, const T* x, float* y, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto va = hn::Set(df, a);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(va, LoadF32(df, x + i), hn::LoadU(df, y + i)), df, y + i);
  for (; i < n; ++i) y[i] += a * F32Of(x[i]);
}

void Axpy(float a, const float* x, float* y, size_t n) { AxpyOf(a, x, y, n); }
void AxpyBf16(float a, const uint16_t* x, float* y, size_t n) {
  AxpyOf(a, reinterpret_cast<const hwy::bfloat16_t*>(x), y, n);
}

void NarrowF32(const float* src, size_t n, DType t, void* dst) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (t == DType::F16) {
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    auto* d = static_cast<hwy::float16_t*>(dst);
    for (; i + N <= n; i += N) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh, d + i);
    for (; i < n; ++i) {
      const uint16_t h = f32_to_f16(src[i]);
      std::memcpy(d + i, &h, 2);
    }
  } else if (t == DType::BF16) {
    // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the high half.
    const hn::RebindToUnsigned<decltype(df)> du;
    const hn::Rebind<uint16_t, decltype(df)> d16;
    const hn::Rebind<int32_t, decltype(df)> di;
    auto* d = static_cast<uint16_t*>(dst);
    for (; i + N <= n; i += N) {
      const auto bits = hn::BitCast(du, hn::LoadU(df, src + i));
      const auto rounded =
          hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u))));
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(rounded))), d16, d + i);
    }
    for (; i < n; ++i) d[i] = f32_to_bf16(src[i]);
  } else {
    std::memcpy(dst, src, n * sizeof(float));
  }
}

void SiluMul(const float* gate, const float* up, size_t n, float* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto one = hn::Set(df, 1.0f);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(df, gate + i);
    const auto sig = hn::Div(one, hn::Add(one, hn::Exp(df, hn::Neg(g))));
    hn::StoreU(hn::Mul(hn::Mul(g, sig), hn::LoadU(df, up + i)), df, out + i);
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

SoftmaxStats SoftmaxScaled(float* x, size_t n, float scale) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto vscale = hn::Set(df, scale);
  size_t i = 0;
  float mx = -std::numeric_limits<float>::infinity();
  auto vmax = hn::Set(df, mx);
  for (; i + N <= n; i += N) {
    const auto v = hn::Mul(hn::LoadU(df, x + i), vscale);
    hn::StoreU(v, df, x + i);
    vmax = hn::Max(vmax, v);
  }
  mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < n; ++i) mx = std::max(mx, x[i] *= scale);
  const auto vm = hn::Set(df, mx);
  auto vsum = hn::Zero(df);
  for (i = 0; i + N <= n; i += N) {
    const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, x + i), vm));
    hn::StoreU(e, df, x + i);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
  const auto inv = hn::Set(df, 1.0f / sum);
  for (i = 0; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(df, x + i), inv), df, x + i);
  for (; i < n; ++i) x[i] *= 1.0f / sum;
  return {mx, sum};
}

double FmaPeakWork(size_t iterations) {
  const hn::ScalableTag<float> df;
  // 12 independent chains cover the FMA latency times the FMA units of
  // current cores (4-5 cycles x 2 units).
  constexpr size_t kChains = 12;
  hn::Vec<decltype(df)> acc[kChains];
  for (size_t c = 0; c < kChains; ++c) acc[c] = hn::Set(df, static_cast<float>(c));
  const auto m = hn::Set(df, 0.999999f), add = hn::Set(df, 1e-6f);
  for (size_t i = 0; i < iterations; ++i)
    for (size_t c = 0; c < kChains; ++c) acc[c] = hn::MulAdd(acc[c], m, add);
  auto sum = acc[0];
  for (size_t c = 1; c < kChains; ++c) sum = hn::Add(sum, acc[c]);
  volatile float sink = hn::GetLane(sum);  // keeps the loop
  (void)sink;
  return 2.0 * kChains * hn::Lanes(df) * static_cast<double>(iterations);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qinfer::simd {
HWY_EXPORT(WidenF32);
HWY_EXPORT(Dot);
HWY_EXPORT(Axpy);
HWY_EXPORT(AxpyBf16);
HWY_EXPORT(NarrowF32);
HWY_EXPORT(SiluMul);
HWY_EXPORT(SoftmaxScaled);
HWY_EXPORT(FmaPeakWork);
HWY_EXPORT(TargetName);

void widen_f32(const void* src, DType t, size_t n, float* dst) { HWY_DYNAMIC_DISPATCH(WidenF32)(src, t, n, dst); }
float dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(Dot)(a, b, n); }
void axpy(float a, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(Axpy)(a, x, y, n); }
void axpy_bf16(float a, const uint16_t* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(AxpyBf16)(a, x, y, n); }
void narrow_f32(const float* src, size_t n, DType t, void* dst) { HWY_DYNAMIC_DISPATCH(NarrowF32)(src, n, t, dst); }
void silu_mul(const float* gate, const float* up, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, n, out);
}
SoftmaxStats softmax_scaled(float* x, size_t n, float scale) {
  return HWY_DYNAMIC_DISPATCH(SoftmaxScaled)(x, n, scale);
}
double fma_peak_work(size_t iterations) { return HWY_DYNAMIC_DISPATCH(FmaPeakWork)(iterations); }
bool cpu_has_avx_vnni() {
#if HWY_ARCH_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);  // CPUID.(7,1):EAX[4]
#else
  return false;
#endif
}

bool cpu_has_avx512_bf16() {
#if HWY_ARCH_X86
  // Asked once: under a hypervisor every CPUID is a trap (~14 % of a decode step when asked per call).
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1);  // CPUID.(7,1):EAX[5]
  }();
  return has;
#else
  return false;
#endif
}

namespace {
constexpr const char* kAvx2Vnni = "AVX2_VNNI";

std::atomic<bool>& avx_vnni_on() {
  static std::atomic<bool> on{cpu_has_avx_vnni()};
  return on;
}

// Highway's targets in `bits`, best first, with AVX2_VNNI before AVX2 where
// it is on (`all`: whether it is or not).
std::string target_list(int64_t bits, bool all) {
  std::string names;
  auto add = [&](const char* name) {
    if (!names.empty()) names += ' ';
    names += name;
  };
  for (; bits != 0; bits &= bits - 1) {  // lowest bit = best target
    const int64_t target = bits & -bits;
#if HWY_ARCH_X86
    if (target == HWY_AVX2 && (all || avx_vnni_on().load(std::memory_order_relaxed))) add(kAvx2Vnni);
#endif
    add(hwy::TargetName(target));
  }
  return names;
}

// The compiled targets this CPU runs, less what limit_target turned off,
// leaving the dispatch as it was: Highway 1.0.3's SupportedTargets() points
// the dispatch at the CPU's best target before it applies DisableTargets'
// mask.
int64_t runnable_bits() {
  const int64_t targets = hwy::SupportedTargets();
  hwy::GetChosenTarget().Update(targets);
  return targets & HWY_TARGETS;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

bool avx_vnni() { return avx_vnni_on().load(std::memory_order_relaxed); }
void use_avx_vnni(bool on) { avx_vnni_on().store(on && cpu_has_avx_vnni(), std::memory_order_relaxed); }

std::string dispatched_target() {
  const std::string name = HWY_DYNAMIC_DISPATCH(TargetName)();
  if (name == "AVX2" && avx_vnni()) return kAvx2Vnni;
  return kernels::amx_prefill() ? name + "+AMX" : name;
}
std::string compiled_targets() { return target_list(HWY_TARGETS, true); }
std::string runnable_targets() { return target_list(runnable_bits(), false); }
bool limit_target(const std::string& name) {
  const std::string wanted = upper(name);
  for (int64_t bits = runnable_bits(); bits != 0; bits &= bits - 1) {
    const int64_t target = bits & -bits;
    const std::string base = hwy::TargetName(target);
    const bool vnni = wanted == kAvx2Vnni && base == "AVX2" && avx_vnni();
    if (wanted != base && !vnni) continue;
    hwy::DisableTargets(target - 1);  // the lower bits are the better targets
    if (base == "AVX2") use_avx_vnni(vnni);
    kernels::use_amx(false);  // as on a CPU of that target: AVX3_DL CPUs without AMX exist
    return true;
  }
  return false;
}
}  // namespace qinfer::simd
#endif
