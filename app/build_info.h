// What this binary is and which kernels it runs on this CPU: printed by
// `qinfer --version` and recorded in `bench --json`, so a figure can be tied
// to the code path that produced it.
#pragma once
#include <string>

namespace qinfer::cli {

struct BuildInfo {
  std::string version, commit;
  std::string simd_target;    // chosen at run time, e.g. "AVX3_DL"
  std::string simd_compiled;  // every target compiled in, best first
  std::string int8_dot;       // the Q8/Q4 kernels' integer dot product
  std::string bf16_products;  // --fast-prefill's pair products
  std::string amx;            // "on", or why Q8/Q4 prefill does not use the AMX tiles
};

BuildInfo build_info();
std::string version_text();

}  // namespace qinfer::cli
