// Commands that write a checkpoint directory (make-test-model, quantize).
#pragma once
#include <string>
#include <vector>

namespace qinfer::cli {

// The directory a command writes a checkpoint into. Refuses a path that is a
// file, or a directory that already holds files unless force (a checkpoint
// of gigabytes is not to be replaced silently).
//
// The command writes into staging(), a directory inside the output, and
// keep() moves the files into place once all are written: a failure midway
// (a full disk) or an interrupt leaves the checkpoint that was there whole
// (renames within one file system do not fail for space; the two
// checkpoints take their space together until then), and a created output
// directory is removed again. The staging directory holds a marker file,
// locked while the command runs: a staging directory an interrupted run left
// behind (its marker unlocked) is cleared by the next run into the same
// directory; one a running command holds, or one without the marker (the
// user's), is refused, never removed.
class OutputDir {
 public:
  // reads_from: the checkpoint the command reads (quantize's model), which
  // the output must not replace.
  OutputDir(std::string path, bool force, const std::string& reads_from = "");
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  const std::string& staging() const { return staging_; }
  // The checkpoint is whole: its files replace those of the same names. In a
  // directory that held one (--force), the earlier one's files not written
  // again (weights, JSON, chat_template.jinja) are removed: they would be
  // read with the new one (a stale template, index or
  // generation_config.json). Others (a README) stay.
  void keep();

 private:
  std::string path_, staging_;
  int marker_fd_ = -1;  // the staging directory's marker, locked (flock) for the command's run
  bool created_ = false, kept_ = false;
  std::vector<std::string> earlier_;  // names of the checkpoint files that were there
};

}  // namespace qinfer::cli
