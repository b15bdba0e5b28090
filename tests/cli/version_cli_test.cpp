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
  EXPECT_NE(qinfer::simd::compiled_targets().find(target.substr(0, target.find('+'))), std::string::npos);  // +AMX
  EXPECT_NE(r.output.find(qinfer::simd::compiled_targets()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("q8/q4 integer dot products: ") + qinfer::kernels::int8_dot_path()),
            std::string::npos)
      << r.output;
  const std::string amx = qinfer::kernels::amx_prefill() ? "on" : std::string("off (") + qinfer::kernels::amx_status();
  EXPECT_NE(r.output.find("AMX-INT8 tiles (q8/q4 prefill): " + amx), std::string::npos) << r.output;
}

// QINFER_AMX=1 turns the AMX tiles on only where the machine allows them; its
// absence keeps them off everywhere, saying how to turn them on.
TEST(VersionCli, AmxTilesAreOptInWhereTheMachineAllowsThem) {
  const auto without = run_command("env -u QINFER_AMX " + qinfer_binary() + " --version 2>&1");
  const auto with = run_command("env QINFER_AMX=1 " + qinfer_binary() + " --version 2>&1");
  ASSERT_EQ(without.exit_code, 0) << without.output;
  ASSERT_EQ(with.exit_code, 0) << with.output;
  const std::string line = "AMX-INT8 tiles (q8/q4 prefill): ";
  const std::string opt_in = "off (off until measured on an AMX host: QINFER_AMX=1 turns it on)";
  if (without.output.find(line + opt_in) != std::string::npos) {  // an AMX host
    EXPECT_NE(with.output.find(line + "on"), std::string::npos) << with.output;
    EXPECT_NE(with.output.find("+AMX (chosen for this CPU"), std::string::npos) << with.output;
    EXPECT_NE(with.output.find("AMX-INT8 tiles (tdpbssd) for prefill"), std::string::npos) << with.output;
  } else {  // the same reason, whatever the variable says
    EXPECT_NE(without.output.find(line + "off ("), std::string::npos) << without.output;
    EXPECT_EQ(with.output, without.output);
    EXPECT_EQ(with.output.find("+AMX"), std::string::npos) << with.output;
  }
}
