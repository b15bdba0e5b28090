#include "output_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <optional>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

// A file a Hugging Face checkpoint (or PEFT adapter) is read from, by the names transformers gives them: the
// directory may hold the user's other files (a package.json, a backup .bin), which stay.
bool checkpoint_file(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  for (const char* known :
       {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "added_tokens.json", "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json",
        "adapter_config.json", "adapter_model.safetensors", "adapter_model.bin", "model.safetensors.index.json",
        "pytorch_model.bin.index.json"})
    if (name == known) return true;
  // Weights, whole or in shards: model.safetensors, model-00001-of-00002.safetensors, pytorch_model-....bin.
  const std::string ext = file.extension().string();
  return (name.rfind("model", 0) == 0 && ext == ".safetensors") ||
         (name.rfind("pytorch_model", 0) == 0 && ext == ".bin");
}

}  // namespace

std::optional<OutputDir::Identity> OutputDir::identity(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return Identity{st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

OutputDir::OutputDir(std::string path, bool force) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) usage_fail("the output directory is empty (\"\"): give the directory to write");
  std::error_code ec;
  // The entry itself: a link to nowhere is not "absent" (a hunt finding: it was taken as a directory the command
  // created, and removed with the failure).
  const fs::file_status entry = fs::symlink_status(path_, ec);
  if (fs::is_symlink(entry) && !fs::exists(path_, ec))
    fail(path_, ": is a symbolic link to nothing (", fs::read_symlink(path_, ec).string(),
         "): give a directory, or a link to one");
  created_ = entry.type() == fs::file_type::not_found;
  if (created_) return;
  if (!fs::is_directory(path_, ec)) fail(path_, ": exists and is not a directory");
  if (!force && !fs::is_empty(path_, ec))
    fail(path_, ": the directory exists and is not empty; pass --force to overwrite the checkpoint in it");
  for (const auto& entry : fs::directory_iterator(path_))
    if (checkpoint_file(entry.path()))
      if (const auto id = identity(entry.path().string())) earlier_.emplace_back(entry.path().string(), *id);
}

void OutputDir::keep() {
  keep_ = true;
  for (const auto& [file, id] : earlier_)
    if (identity(file) == id) std::filesystem::remove(file);  // not written again: the earlier checkpoint's
}

OutputDir::~OutputDir() {
  std::error_code ignored;
  if (created_ && !keep_) std::filesystem::remove_all(path_, ignored);
}

}  // namespace qinfer::cli
