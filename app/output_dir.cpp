#include "output_dir.h"

#include <algorithm>
#include <filesystem>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

namespace fs = std::filesystem;

// Named so that a user who finds it after an interrupt knows what it is.
constexpr const char* kStagingName = "qinfer-incomplete-checkpoint";

// A file a Hugging Face checkpoint (or PEFT adapter) is read from, by the names transformers gives them: the
// directory may hold the user's other files (a package.json, a backup .bin), which stay.
bool checkpoint_file(const fs::path& file) {
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

// An interrupted run's staging directory holds what this command writes and nothing else; anything more is the
// user's, not to be removed.
void remove_interrupted_staging(const fs::path& staging) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(staging, ec))) return;
  if (!fs::is_directory(fs::symlink_status(staging, ec)))
    fail(staging.string(), ": exists and is not a directory this command left (move it away)");
  for (const auto& entry : fs::directory_iterator(staging))
    if (!entry.is_regular_file() || !checkpoint_file(entry.path()))
      fail(staging.string(), ": holds ", entry.path().filename().string(),
           ", which an interrupted run of this command would not have written (move it away)");
  fs::remove_all(staging);
}

// The model's files may be the output directory's own, or links into it (a directory of links, a Hugging Face
// snapshot into its blobs/): the output would replace what the model is read from.
void refuse_output_over(const std::string& model_dir, const std::string& out) {
  std::error_code ec;
  if (fs::equivalent(model_dir, out, ec))
    fail(out, ": the output directory is the model's own directory (its weights are mapped from there)");
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    const fs::path target = fs::canonical(entry.path(), ec);
    if (!ec && fs::equivalent(target.parent_path(), out, ec))
      fail(out, ": the model's files are there (", entry.path().string(), " is ", target.string(),
           "): the output would replace them");
  }
}

}  // namespace

OutputDir::OutputDir(std::string path, bool force, const std::string& reads_from) : path_(std::move(path)) {
  if (path_.empty()) usage_fail("the output directory is empty (\"\"): give the directory to write");
  staging_ = path_ + "/" + kStagingName;
  std::error_code ec;
  // The entry itself: a link to nowhere is not "absent" (a hunt finding: it was taken as a directory the command
  // created, and removed with the failure).
  const fs::file_status entry = fs::symlink_status(path_, ec);
  if (fs::is_symlink(entry) && !fs::exists(path_, ec))
    fail(path_, ": is a symbolic link to nothing (", fs::read_symlink(path_, ec).string(),
         "): give a directory, or a link to one");
  created_ = entry.type() == fs::file_type::not_found;
  if (created_) {
    fs::create_directories(path_);
  } else {
    if (!fs::is_directory(path_, ec)) fail(path_, ": exists and is not a directory");
    if (!reads_from.empty()) refuse_output_over(reads_from, path_);
    remove_interrupted_staging(staging_);
    if (!force && !fs::is_empty(path_, ec))
      fail(path_, ": the directory exists and is not empty; pass --force to overwrite the checkpoint in it");
    for (const auto& file : fs::directory_iterator(path_))
      if (checkpoint_file(file.path())) earlier_.push_back(file.path().filename().string());
  }
  fs::create_directory(staging_);
}

void OutputDir::keep() {
  std::vector<std::string> written;
  for (const auto& file : fs::directory_iterator(staging_)) written.push_back(file.path().filename().string());
  // A rename replaces the entry, a link included, without writing through it into what it names.
  for (const std::string& name : written) fs::rename(staging_ + "/" + name, path_ + "/" + name);
  fs::remove(staging_);
  kept_ = true;
  for (const std::string& name : earlier_)
    if (std::find(written.begin(), written.end(), name) == written.end()) fs::remove(path_ + "/" + name);
}

OutputDir::~OutputDir() {
  if (kept_) return;
  std::error_code ignored;
  fs::remove_all(created_ ? path_ : staging_, ignored);
}

}  // namespace qinfer::cli
