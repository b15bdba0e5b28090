// A read-only memory map of a whole file. Weights stay in the page cache and
// are read in place, so resident memory is about the file size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Whole file as a string (small text files of a checkpoint: JSON configs,
// tokenizer.json): a regular file only, since opening a FIFO with no writer
// would block the load (or a server thread) forever; Error naming it otherwise.
std::string read_text_file(const std::string& path);
// The same for a file a flag names, which may also be a pipe (a prompt given
// as `--prompt-file <(...)`).
std::string read_text_file_or_pipe(const std::string& path);
// Whether a regular file is at `path`: false when nothing is there; Error
// when something else is (a directory, a FIFO, a device, a symbolic link to
// nothing or a loop) or it cannot be looked at, so that it is not taken for
// absent.
bool file_exists(const std::string& path);
// Creates or replaces path with bytes; an Error naming the file when any of it
// could not be written (a full disk included).
void write_file(const std::string& path, std::string_view bytes);
// dir/name for a checkpoint file about to be written, its old directory entry
// removed first: the entry may be a link to another checkpoint's file (a
// Hugging Face snapshot's are), which writing through would overwrite.
std::string replaced_file(const std::string& dir, const std::string& name);

}  // namespace qinfer
