// The text a command-line flag names: a file's path, or - for standard input
// (--prompt-file, --json-schema @FILE, perplexity's --file). A file that
// cannot be read is a failure while running (exit 1), named with its flag.
#pragma once
#include <string>

namespace qinfer::cli {

// The file's bytes as they are.
std::string read_named_file(const char* flag, const std::string& path);
// The file's text, or standard input's for "-": error naming the flag when
// the path is empty, or the text is empty or not UTF-8 (`what`: what the
// text is, for the message, e.g. "the prompt").
std::string read_text_flag(const char* flag, const std::string& path, const char* what);

}  // namespace qinfer::cli
