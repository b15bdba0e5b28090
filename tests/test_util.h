// Helpers shared by the tests: fixture paths and scratch directories.
#pragma once
#include <filesystem>
#include <string>
#include <unistd.h>

namespace qinfer::test {

inline std::string data_path(const std::string& rel) { return std::string(QINFER_TEST_DATA) + "/" + rel; }

// A fresh directory under the temp dir, removed when the object dies.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() / ("qinfer-" + tag + "-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(counter()++));
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
