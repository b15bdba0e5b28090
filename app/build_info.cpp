#include "build_info.h"

#include "ops/matmul_kernels.h"
#include "ops/simd.h"
#include "qinfer_version.h"

namespace qinfer::cli {

BuildInfo build_info() {
  return {QINFER_VERSION,
          QINFER_GIT_COMMIT,
          simd::dispatched_target(),
          simd::compiled_targets(),
          kernels::int8_dot_path(),
          kernels::bf16_product_path(),
          kernels::amx_prefill() ? "on" : std::string("off (") + kernels::amx_status() + ")"};
}

std::string version_text() {
  const BuildInfo b = build_info();
  return "qinfer " + b.version + " (commit " + b.commit + ")\nkernels: " + b.simd_target +
         " (chosen for this CPU; compiled: " + b.simd_compiled + ")\nq8/q4 integer dot products: " + b.int8_dot +
         "\nbf16 products (--fast-prefill): " + b.bf16_products + "\nAMX-INT8 tiles (q8/q4 prefill): " + b.amx;
}

}  // namespace qinfer::cli
