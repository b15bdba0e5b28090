// Runs a test body once per SIMD target compiled into the kernels and
// supported by this CPU (the host's best targets in a -march=native build;
// SSSE3, SSE4, AVX2, AVX3, AVX3_DL and the portable EMU128 with
// QINFER_NATIVE=OFF), so the portable paths are checked too. The first call
// prints which targets ran and which were compiled but skipped because this
// CPU cannot run them.
#pragma once
#include <gtest/gtest.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cstdio>
#include <functional>
#include <string>

namespace qinfer::test {

inline std::string target_names(int64_t targets) {
  std::string names;
  for (int64_t bits = targets; bits != 0; bits &= bits - 1) names += std::string(" ") + hwy::TargetName(bits & -bits);
  return names.empty() ? " (none)" : names;
}

inline void for_each_target(const std::function<void()>& body) {
  static const bool reported = [] {
    const int64_t compiled = HWY_TARGETS;
    std::printf("kernel targets tested:%s; compiled but skipped, this CPU cannot run them:%s\n",
                target_names(compiled & hwy::SupportedTargets()).c_str(),
                target_names(compiled & ~hwy::SupportedTargets()).c_str());
    return true;
  }();
  (void)reported;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace qinfer::test
