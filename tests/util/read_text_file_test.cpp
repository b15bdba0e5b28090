// read_text_file: every byte of a regular file; read_text_file_or_pipe also
// of a pipe (a prompt given as `--prompt-file <(...)`), which has no size to
// reserve. A checkpoint's file that is a FIFO is an error at once, not a
// load blocked until someone writes to it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "util/error.h"
#include "util/mapped_file.h"

namespace {

// Bytes of every value, longer than the reader's 64 KiB chunk and not a multiple of it.
std::string sample_bytes() {
  std::string bytes;
  for (size_t i = 0; i < 200'001; ++i) bytes += static_cast<char>((i * 131 + i / 7) & 0xFF);
  return bytes;
}

std::string scratch_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("qinfer-read-") + std::to_string(::getpid()) + name))
      .string();
}

}  // namespace

TEST(ReadTextFile, ReadsEveryByteOfAFileAndOfAPipeWhereAPipeIsTaken) {
  const std::string bytes = sample_bytes();
  const std::string file = scratch_path(".bin");
  std::ofstream(file, std::ios::binary) << bytes;
  EXPECT_EQ(qinfer::read_text_file(file), bytes);
  std::ofstream(file, std::ios::binary | std::ios::trunc).close();
  EXPECT_EQ(qinfer::read_text_file(file), "");
  std::filesystem::remove(file);

  const std::string fifo = scratch_path(".fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << bytes; });
  const std::string read = qinfer::read_text_file_or_pipe(fifo);
  writer.join();
  EXPECT_EQ(read, bytes);
  try {  // nobody writes to it: a blocking open would never return
    qinfer::read_text_file(fifo);
    ADD_FAILURE() << "a FIFO was read as a checkpoint's file";
  } catch (const qinfer::Error& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": not a regular file");
  }
  std::filesystem::remove(fifo);
}
