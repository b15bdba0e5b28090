#include "output_dir.h"

#include <filesystem>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

OutputDir::OutputDir(std::string path, bool force) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) usage_fail("the output directory is empty (\"\"): give the directory to write");
  std::error_code ec;
  opened_ = fs::file_time_type::clock::now();
  created_ = !fs::exists(path_, ec) && !ec;
  if (created_) return;
  if (!fs::is_directory(path_, ec)) fail(path_, ": exists and is not a directory");
  if (!force && !fs::is_empty(path_, ec))
    fail(path_, ": the directory exists and is not empty; pass --force to overwrite the checkpoint in it");
}

namespace {

// A file a checkpoint is read from: its weights in any format, its JSON files (config, tokenizer, index, adapter
// config) and template.
bool checkpoint_file(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  for (const char* e : {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".json", ".jinja"})
    if (ext == e) return true;
  return file.filename() == "merges.txt" || file.filename() == "tokenizer.model";
}

}  // namespace

void OutputDir::keep() {
  namespace fs = std::filesystem;
  keep_ = true;
  if (created_) return;
  // What the command wrote is newer than the directory's opening (each file is written as a new one).
  for (const auto& entry : fs::directory_iterator(path_)) {
    if (!checkpoint_file(entry.path())) continue;
    const bool link = entry.is_symlink();
    if (link || (entry.is_regular_file() && entry.last_write_time() < opened_)) fs::remove(entry.path());
  }
}

OutputDir::~OutputDir() {
  std::error_code ignored;
  if (created_ && !keep_) std::filesystem::remove_all(path_, ignored);
}

}  // namespace qinfer::cli
