#include "build_info.h"

#include "ops/simd.h"
#include "qinfer_version.h"

namespace qinfer::cli {

BuildInfo build_info() {
  return {QINFER_VERSION, QINFER_GIT_COMMIT, simd::dispatched_target(), simd::compiled_targets()};
}

std::string version_text() {
  const BuildInfo b = build_info();
  return "qinfer " + b.version + " (commit " + b.commit + ")\nkernels: " + b.simd_target +
         " (chosen for this CPU; compiled: " + b.simd_compiled + ")";
}

}  // namespace qinfer::cli
