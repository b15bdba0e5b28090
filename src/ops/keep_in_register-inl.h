// KeepInRegister for the register tiles of every kernel file, compiled once
// per Highway target (include it after <hwy/highway.h>, outside any namespace).
#if defined(QINFER_OPS_KEEP_IN_REGISTER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QINFER_OPS_KEEP_IN_REGISTER_INL_H_
#undef QINFER_OPS_KEEP_IN_REGISTER_INL_H_
#else
#define QINFER_OPS_KEEP_IN_REGISTER_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qinfer::kernels {
namespace HWY_NAMESPACE {

// Pins a vector in a register. x86 compilers like to fold a vector that is
// used by several FMAs back into each of them as a memory operand, which
// makes the load ports, not the FMA units, a tile's bottleneck.
template <class V>
HWY_INLINE void KeepInRegister(V& v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
  asm("" : "+v"(v.raw));
#else
  (void)v;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace qinfer::kernels
HWY_AFTER_NAMESPACE();

#endif  // QINFER_OPS_KEEP_IN_REGISTER_INL_H_
