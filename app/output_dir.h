// Commands that write a checkpoint directory (make-test-model, quantize).
#pragma once
#include <string>

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
  void keep() { keep_ = true; }  // the checkpoint is whole

 private:
  std::string path_;
  bool created_ = false, keep_ = false;
};

}  // namespace qinfer::cli
