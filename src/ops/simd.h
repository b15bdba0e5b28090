// SIMD building blocks, written once with Highway and dispatched at run time
// to the best target of the CPU (AVX2 here, AVX-512 or NEON elsewhere).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/dtype.h"

namespace qinfer::simd {

// dst[i] = src[i] widened to f32, for i < n.
void widen_f32(const void* src, DType t, size_t n, float* dst);

float dot(const float* a, const float* b, size_t n);

// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, size_t n);
// The same with x in bf16 (its bits): widened exactly, so the products and
// sums are those of axpy on the widened values, bit for bit.
void axpy_bf16(float a, const uint16_t* x, float* y, size_t n);

// dst[i] = src[i] rounded to nearest in t (F16, BF16; F32 copies).
void narrow_f32(const float* src, size_t n, DType t, void* dst);

// out[i] = silu(gate[i]) * up[i] (in place when out == gate).
void silu_mul(const float* gate, const float* up, size_t n, float* out);

// x = softmax(x * scale), in place, in f32 with the maximum subtracted.
// Returns that maximum (of x * scale) and the sum of the exponentials the
// results were divided by, so partial softmaxes can be merged.
struct SoftmaxStats {
  float max, sum;
};
SoftmaxStats softmax_scaled(float* x, size_t n, float scale);

// The machine's f32 multiply-add peak, for benchmarks: runs `iterations`
// rounds of independent register-resident FMAs and returns the number of
// floating-point operations done (2 per lane per FMA).
double fma_peak_work(size_t iterations);

// The target the kernels dispatch to on this CPU (e.g. "AVX3_DL"), and every
// target compiled in, best first ("AVX3_DL AVX3 AVX2_VNNI AVX2 ..."). Targets
// are Highway's, plus AVX2_VNNI: the AVX2 kernels with AVX-VNNI's 256-bit
// vpdpbusd for Q8/Q4 (Intel's client CPUs since Alder Lake, which lack
// AVX-512; Zen 5), chosen at run time inside Highway's AVX2 target.
std::string dispatched_target();
std::string compiled_targets();

// The compiled targets this CPU can run, best first.
std::string runnable_targets();

// Dispatches every kernel from now on to the runnable target named (e.g.
// "AVX2", case-insensitive) or a lesser one, as on a CPU without the better
// ones: to measure or debug one ISA's kernels on a host that has more. False
// (nothing changed) when `name` is not among runnable_targets().
bool limit_target(const std::string& name);

// Whether the AVX2 kernels use AVX-VNNI: the CPU has it and neither
// limit_target("AVX2") nor use_avx_vnni(false) turned it off.
bool avx_vnni();
bool cpu_has_avx_vnni();
// Whether the CPU has AVX512-BF16 (vdpbf16ps), which Highway 1.0.3 does not detect.
bool cpu_has_avx512_bf16();
// Turns AVX-VNNI on (where the CPU has it) or off for the AVX2 kernels: the
// tests run those kernels both ways.
void use_avx_vnni(bool on);

}  // namespace qinfer::simd
