// The standard streams as the commands rely on them. A process started with
// one of them closed would hand its number to the next file or socket it
// opens (serve's first client became its stderr, and got the request log);
// so a closed one is held open on /dev/null, in the mode that makes using it
// fail (EBADF) as the closed stream would. What reads standard input checks
// first that it can (a shell's `< dir` gives a directory, whose reads fail
// with EISDIR, which a line loop would take for an empty input) and after,
// that no read failed.
#pragma once

namespace qinfer::cli {

// Before anything opens a file: fds 0, 1 and 2 are open.
void hold_closed_standard_streams();

// Error "standard input is a directory" or "... is not open for reading".
void require_readable_stdin();

// Error "reading standard input failed: ..." when a read of std::cin failed
// (rather than reaching the end).
void require_stdin_read_without_error();

}  // namespace qinfer::cli
