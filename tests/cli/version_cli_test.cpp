// `qinfer --version`: version, commit and the kernels' SIMD target, as the
// library itself reports them for this CPU.
#include <gtest/gtest.h>

#include <regex>

#include "ops/matmul_kernels.h"
#include "ops/simd.h"
#include "test_util.h"

using qinfer::test::qinfer_binary;
using qinfer::test::run_command;

TEST(VersionCli, NamesVersionCommitAndDispatchedTarget) {
  const auto r = run_command(qinfer_binary() + " --version 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex(R"(^qinfer \d+\.\d+\.\d+ \(commit [0-9a-f]{7,}(-dirty)?|unknown\))")))
      << r.output;
  const std::string target = qinfer::simd::dispatched_target();
  EXPECT_NE(r.output.find("kernels: " + target + " "), std::string::npos) << r.output;
  EXPECT_NE(qinfer::simd::compiled_targets().find(target), std::string::npos);
  EXPECT_NE(r.output.find(qinfer::simd::compiled_targets()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("q8/q4 integer dot products: ") + qinfer::kernels::int8_dot_path()),
            std::string::npos)
      << r.output;
}
