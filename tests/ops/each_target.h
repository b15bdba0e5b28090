// Runs a test body once per SIMD target compiled into the kernels and
// supported by this CPU (AVX2 only in a -march=native build; SSSE3, SSE4,
// AVX2, ... with QINFER_NATIVE=OFF), so the portable paths are checked too.
#pragma once
#include <gtest/gtest.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <functional>

namespace qinfer::test {

inline void for_each_target(const std::function<void()>& body) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace qinfer::test
