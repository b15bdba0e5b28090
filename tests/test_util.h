// Helpers shared by the tests: fixture paths and scratch directories.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

// The compiler's own IEEE half-precision type, the reference for the f16
// conversions: _Float16 (GCC on x86; clang 14 only with AVX512-FP16), __fp16
// on 64-bit ARM (where GCC 12 has no _Float16 in C++).
#if defined(__aarch64__)
#define QINFER_TEST_NATIVE_F16 __fp16
#elif defined(__FLT16_MAX__)
#define QINFER_TEST_NATIVE_F16 _Float16
#endif

namespace qinfer::test {

inline std::string data_path(const std::string& rel) { return std::string(QINFER_TEST_DATA) + "/" + rel; }

// The index of the largest logit, the first on ties (greedy decoding).
inline int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout (and stderr when merged)
};

// Runs a shell command line, capturing its stdout. Add " 2>&1" to capture stderr too.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, got);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

#ifdef QINFER_BINARY  // the suite's executables; the fuzz targets use the checkpoint writers only
inline std::string qinfer_binary() { return QINFER_BINARY; }
#endif

// n values drawn from N(0, scale^2), the same for the same seed.
inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A fresh directory under the temp dir, removed when the object dies.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() /
            ("qinfer-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

}  // namespace qinfer::test
