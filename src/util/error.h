// The one error type of qinfer: a message that names the file, tensor, field
// or byte offset at fault. Frontends print what() and exit non-zero (CLI) or
// answer 4xx (server).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace qinfer {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws an E (an Error) whose message is built from parts.
template <class E, class... Parts>
[[noreturn]] void fail_as(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  throw E(os.str());
}

// fail("tensor ", name, " has dtype ", dtype) — builds the message from parts.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  fail_as<Error>(std::forward<Parts>(parts)...);
}

}  // namespace qinfer
