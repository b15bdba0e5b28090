#include "standard_input.h"

#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

namespace qinfer::cli {

void require_readable_stdin() {
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode))
    fail("standard input is a directory, not a file or a stream");
}

}  // namespace qinfer::cli
