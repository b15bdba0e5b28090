// Runs a test body once per SIMD target compiled into the kernels and
// supported by this CPU (the host's best targets in a -march=native build;
// SSSE3, SSE4, AVX2, AVX3, AVX3_DL and the portable EMU128 with
// QINFER_NATIVE=OFF; AVX2 twice where the CPU has AVX-VNNI: AVX2_VNNI and
// AVX2), so the portable paths are checked too. The first call prints which
// targets ran and which were compiled but skipped because this CPU cannot run
// them.
#pragma once
#include <gtest/gtest.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>

#include "ops/simd.h"

namespace qinfer::test {

// The names in `all` (space-separated) that are not in `some`.
inline std::string names_missing(const std::string& all, const std::string& some) {
  std::istringstream in(all);
  std::string name, missing;
  while (in >> name)
    if ((" " + some + " ").find(" " + name + " ") == std::string::npos) missing += " " + name;
  return missing.empty() ? " (none)" : missing;
}

inline void for_each_target(const std::function<void()>& body) {
  static const bool reported = [] {
    std::printf("kernel targets tested: %s; compiled but skipped, this CPU cannot run them:%s\n",
                simd::runnable_targets().c_str(),
                names_missing(simd::compiled_targets(), simd::runnable_targets()).c_str());
    return true;
  }();
  (void)reported;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    bool avx2 = false;
#if HWY_ARCH_X86
    avx2 = target == HWY_AVX2;
#endif
    for (bool vnni : {true, false}) {
      if (!vnni && !(avx2 && simd::cpu_has_avx_vnni())) break;
      simd::use_avx_vnni(vnni);
      SCOPED_TRACE(simd::dispatched_target());
      body();
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  simd::use_avx_vnni(true);
}

}  // namespace qinfer::test
