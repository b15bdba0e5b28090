// Lines typed at the chat prompt. On a terminal: editing and history through
// libedit (arrow keys, Ctrl-A/E, Ctrl-R, the session's earlier lines);
// otherwise (a pipe, a file) plain line reads, one message per line.
#pragma once
#include <string>

struct editline;
struct history;

namespace qinfer::cli {

class LineReader {
 public:
  enum class Status { Line, Interrupted, Eof };

  // Edits only when stdin and stdout are both terminals.
  LineReader();
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool interactive() const { return el_ != nullptr; }
  // One line without its newline. Interrupted: a signal (Ctrl-C) arrived
  // while waiting (the typed line is dropped); Eof: Ctrl-D or end of input.
  Status read(const std::string& prompt, std::string& line);
  // Adds a message to the history (Up recalls it).
  void remember(const std::string& message);

 private:
  static const char* prompt_of(editline* el);

  editline* el_ = nullptr;
  history* hist_ = nullptr;
  std::string prompt_;
};

}  // namespace qinfer::cli
