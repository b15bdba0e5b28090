#include "output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

namespace fs = std::filesystem;

// Named so that a user who finds it after an interrupt knows what it is.
constexpr const char* kStagingName = "qinfer-incomplete-checkpoint";
// In the staging directory: written by this command, locked while it runs.
constexpr const char* kMarkerName = ".qinfer-staging";

// The marker at `path` opened and locked; -1 when another process holds the lock (errno EWOULDBLOCK).
int lock_marker(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) return -1;
    fail(path, ": cannot lock: ", std::strerror(error));
  }
  return fd;
}

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

// An interrupted run's staging directory: its marker is there and unlocked. One without the marker is not this
// command's (a review finding: a model copied there was removed, then not found to quantize), and one whose marker
// is locked is a run's in progress (a second run into the same directory removed the first's files).
void remove_interrupted_staging(const fs::path& staging) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(staging, ec))) return;
  const std::string marker = (staging / kMarkerName).string();
  if (!fs::is_directory(fs::symlink_status(staging, ec)) || !fs::is_regular_file(fs::symlink_status(marker, ec)))
    fail(staging.string(), ": is not what an interrupted run of this command left (no ", kMarkerName,
         " in it): move it away");
  const int fd = lock_marker(marker, 0);
  if (fd < 0) fail(staging.string(), ": another qinfer run is writing a checkpoint there now");
  fs::remove_all(staging, ec);
  ::close(fd);
  if (ec) fail(staging.string(), ": cannot remove what an interrupted run left: ", ec.message());
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
  if (!fs::create_directory(staging_)) fail(staging_, ": exists (another run began meanwhile?)");
  marker_fd_ = lock_marker(staging_ + "/" + kMarkerName, O_CREAT | O_EXCL);
  if (marker_fd_ < 0) fail(staging_, ": another qinfer run is writing a checkpoint there now");
}

void OutputDir::keep() {
  std::vector<std::string> written;
  for (const auto& file : fs::directory_iterator(staging_))
    if (file.path().filename() != kMarkerName) written.push_back(file.path().filename().string());
  // config.json goes first and comes back last: stopped between the renames (a kill), the directory holds no
  // config.json, which fails to load by name, rather than one config.json beside the other checkpoint's weights.
  const auto config =
      std::stable_partition(written.begin(), written.end(), [](const std::string& n) { return n != "config.json"; });
  if (config != written.end()) fs::remove(path_ + "/config.json");
  // A rename replaces the entry, a link included, without writing through it into what it names.
  for (const std::string& name : written) fs::rename(staging_ + "/" + name, path_ + "/" + name);
  kept_ = true;
  for (const std::string& name : earlier_)
    if (std::find(written.begin(), written.end(), name) == written.end()) fs::remove(path_ + "/" + name);
  fs::remove_all(staging_);
}

OutputDir::~OutputDir() {
  std::error_code ignored;
  if (!kept_) fs::remove_all(created_ ? path_ : staging_, ignored);
  if (marker_fd_ >= 0) ::close(marker_fd_);
}

}  // namespace qinfer::cli
