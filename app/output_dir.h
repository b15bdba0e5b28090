// Commands that write a checkpoint directory (make-test-model, quantize).
#pragma once
#include <filesystem>
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
  // The checkpoint is whole. In a directory that held one (--force), the
  // files of that one the command did not write again (weights, JSON,
  // chat_template.jinja) are removed: they would be read with the new one
  // (a stale template, index or generation_config.json). Others (a README)
  // stay.
  void keep();

 private:
  std::string path_;
  bool created_ = false, keep_ = false;
  std::filesystem::file_time_type opened_;
};

}  // namespace qinfer::cli
