#include "standard_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "util/error.h"

namespace qinfer::cli {

void hold_closed_standard_streams() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() takes the lowest free number: this one.
    const int held = ::open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY);
    if (held != fd && held >= 0) ::close(held);
  }
}

void require_readable_stdin() {
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode))
    fail("standard input is a directory, not a file or a stream");
  const int flags = ::fcntl(STDIN_FILENO, F_GETFL);
  if (flags == -1 || (flags & O_ACCMODE) == O_WRONLY) fail("standard input is not open for reading (closed?)");
}

void require_stdin_read_without_error() {
  if (std::cin.bad() || std::ferror(stdin)) fail("reading standard input failed: ", std::strerror(errno));
}

}  // namespace qinfer::cli
