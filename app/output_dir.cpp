#include "output_dir.h"

#include <filesystem>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

void check_output_dir(const std::string& path, bool force) {
  namespace fs = std::filesystem;
  if (path.empty()) usage_fail("the output directory is empty (-o \"\")");
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (!fs::is_directory(path, ec)) fail(path, ": exists and is not a directory");
  if (!force && !fs::is_empty(path, ec))
    fail(path, ": the directory exists and is not empty; pass --force to overwrite the checkpoint in it");
}

}  // namespace qinfer::cli
