// nlohmann's parse errors in plain words, for the files of a checkpoint:
// "[json.exception.parse_error.101] parse error at line 1, column 2: syntax
// error while parsing value - invalid literal; last read: '...'" loses the
// library's id, and the echo of the bytes it read, which it prints as they
// are (a file that is not text would put raw bytes in the message).
// Header-only: the modules that parse JSON link nlohmann, util does not.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace qinfer {

// "line 1, column 2: syntax error while parsing value - invalid literal"
// (the position as the library gives it, when it gives one); without it when
// `with_position` is false, for text cut out of a larger file.
inline std::string json_error_text(const nlohmann::json::exception& e, bool with_position = true) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0 && s.find("] ") != std::string::npos) s.erase(0, s.find("] ") + 2);
  if (s.rfind("parse error", 0) == 0) {
    const size_t colon = s.find(": ");
    if (colon != std::string::npos)
      s.erase(0, with_position && colon > 11 ? 15 : colon + 2);  // " at line L, column C" kept as "line L, column C"
  }
  const size_t echo = s.find("; last read: '");
  if (echo != std::string::npos) {
    const size_t expected = s.find("'; expected ", echo);
    s.erase(echo, expected == std::string::npos ? std::string::npos : expected + 1 - echo);
  }
  return s;
}

}  // namespace qinfer
