// `cmake --install` gives one self-contained binary: it runs from the install
// prefix with the source and build trees out of reach, and make-test-model
// writes the Qwen3 tokenizer compiled into it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

using qinfer::test::data_path;
using qinfer::test::run_command;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(InstallCli, InstalledBinaryNeedsNoSourceTree) {
  qinfer::test::ScratchDir dir("install");
  auto r =
      run_command("cmake --install " + std::string(QINFER_BUILD_DIR) + " --prefix " + dir.file("prefix") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string installed = dir.file("prefix/bin/qinfer");
  ASSERT_TRUE(std::filesystem::exists(installed));
  // Moved away from where it was built, as a package would ship it.
  std::filesystem::rename(installed, dir.file("qinfer"));
  r = run_command("cd / && " + dir.file("qinfer") + " make-test-model --preset tiny --out " + dir.file("m") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    EXPECT_EQ(read_file(dir.file("m/") + f), read_file(data_path(f))) << f;
  r = run_command(dir.file("qinfer") + " generate -m " + dir.file("m") + " -p 'Hello' -n 2 --temp 0 --json 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}
