// A command line that parsed but holds a value out of its range (-n 0,
// --weights q5, two prompts at once): exits 2 like a line that does not
// parse, naming the flag, where a failure while running exits 1.
#pragma once
#include <utility>

#include "util/error.h"

namespace qinfer::cli {

class UsageError : public Error {
 public:
  using Error::Error;
};

template <class... Parts>
[[noreturn]] void usage_fail(Parts&&... parts) {
  fail_as<UsageError>(std::forward<Parts>(parts)...);
}

}  // namespace qinfer::cli
