#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "util/error.h"

namespace qinfer {

namespace {

// What a path that is not a regular file is, for "PATH: is X, not a file".
const char* kind_of_non_file(mode_t mode) {
  return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : "a device or socket";
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait for one forever,
  // before fstat could refuse it (no effect on a regular file).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": is ", kind_of_non_file(st.st_mode), ", not a file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(path, ": cannot mmap ", size_, " bytes: ", std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_text_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(path, S_ISDIR(st.st_mode) ? ": is a directory, not a file" : ": not a regular file");
  return read_text_file_or_pipe(path);
}

std::string read_text_file_or_pipe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(path, ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open: ", std::strerror(errno));
  // Straight into the string, reserved to a regular file's size (a pipe has
  // none): through a stringstream the 5 MB tokenizer.json was copied three
  // times, a quarter of the time `qinfer tokenize` took to start.
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<size_t>(st.st_size));
  std::vector<char> chunk(size_t{1} << 16);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
  if (in.bad()) fail(path, ": read error");
  return text;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, ": cannot create: ", std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    const int error = errno;
    std::remove(path.c_str());  // a partial file would be read as a whole one
    fail(path, ": write failed: ", std::strerror(error));
  }
}

std::string replaced_file(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail(path, ": cannot replace: ", std::strerror(errno));
  return path;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    // A link to nothing (a Hugging Face snapshot's link to a blob deleted or
    // never downloaded) is a fault to name, not an absent file.
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      std::error_code ec;
      const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
      fail(path, ": is a broken symbolic link (to ", ec ? std::string("?") : target.string(), ": ",
           std::strerror(error), ")");
    }
    if (error == ENOENT || error == ENOTDIR) return false;
    fail(path, ": ", std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) fail(path, ": is ", kind_of_non_file(st.st_mode), ", not a file");
  return true;
}

}  // namespace qinfer
