// Commands that write a checkpoint directory (make-test-model, quantize).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qinfer::cli {

// The directory a command writes a checkpoint into. Refuses a path that is a
// file, or a directory that already holds files unless force (a checkpoint
// of gigabytes is not to be replaced silently). A directory the command
// created is removed again unless the command keeps it: a failure (a full
// disk) would leave a partial checkpoint that fails to load and blocks the
// rerun.
class OutputDir {
 public:
  OutputDir(std::string path, bool force);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  // The checkpoint is whole. In a directory that held one (--force), the
  // files of that one the command did not write again (weights, JSON,
  // chat_template.jinja) are removed: they would be read with the new one
  // (a stale template, index or generation_config.json). Others (a README)
  // stay.
  void keep();

 private:
  // A directory entry itself (a link, not what it names): its inode and when that last changed. A file written
  // again is a new inode (replaced_file), and one that reuses the number has a new change time. Timestamps alone
  // would not do: the kernel stamps files with a coarse clock, so a file written just after a reading of a fine
  // one can look older.
  struct Identity {
    uint64_t device, inode;
    int64_t changed_s, changed_ns;
    bool operator==(const Identity&) const = default;
  };
  static std::optional<Identity> identity(const std::string& path);

  std::string path_;
  bool created_ = false, keep_ = false;
  std::vector<std::pair<std::string, Identity>> earlier_;  // the checkpoint files that were there
};

}  // namespace qinfer::cli
