#include "text_file_flag.h"

#include <iostream>
#include <iterator>

#include "standard_input.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/utf8.h"

namespace qinfer::cli {

std::string read_named_file(const char* flag, const std::string& path) {
  try {
    return read_text_file_or_pipe(path);
  } catch (const Error& e) {
    fail(flag, ": ", e.what());
  }
}

std::string read_text_flag(const char* flag, const std::string& path, const char* what) {
  if (path.empty()) usage_fail(flag, " is empty: give the path of the file, or - for standard input");
  if (path == "-") require_readable_stdin();
  const std::string text =
      path == "-" ? std::string(std::istreambuf_iterator<char>(std::cin), {}) : read_named_file(flag, path);
  if (path == "-") require_stdin_read_without_error();
  const std::string named = std::string(flag) + " " + (path == "-" ? std::string("- (standard input)") : path);
  if (text.empty()) fail(named, ": ", what, " is empty");
  utf8::require_valid(text, named);
  return text;
}

}  // namespace qinfer::cli
