#include "output_dir.h"

#include <filesystem>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

OutputDir::OutputDir(std::string path, bool force) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) usage_fail("the output directory is empty (\"\"): give the directory to write");
  std::error_code ec;
  created_ = !fs::exists(path_, ec) && !ec;
  if (created_) return;
  if (!fs::is_directory(path_, ec)) fail(path_, ": exists and is not a directory");
  if (!force && !fs::is_empty(path_, ec))
    fail(path_, ": the directory exists and is not empty; pass --force to overwrite the checkpoint in it");
}

OutputDir::~OutputDir() {
  std::error_code ignored;
  if (created_ && !keep_) std::filesystem::remove_all(path_, ignored);
}

}  // namespace qinfer::cli
