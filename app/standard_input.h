// What reads standard input checks first that it can: a shell's `< dir`
// gives a directory, whose reads fail with EISDIR, which a line loop would
// take for an empty input and succeed on.
#pragma once

namespace qinfer::cli {

// Error "standard input is a directory" when it is one.
void require_readable_stdin();

}  // namespace qinfer::cli
