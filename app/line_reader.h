// Lines typed at the chat prompt. On a terminal: editing and history through
// libedit (arrow keys, Ctrl-A/E, Ctrl-R, the session's earlier lines), the
// prompt and the line drawn on stdout's terminal, or stderr's where stdout
// is a file or a pipe (`chat | tee log`: the log holds the replies);
// otherwise (a pipe, a file) plain line reads, one message per line.
#pragma once
#include <cstdio>
#include <string>

struct editline;
struct history;

namespace qinfer::cli {

class LineReader {
 public:
  enum class Status { Line, Interrupted, Eof };

  // Edits only when stdin and stdout (or else stderr) are terminals.
  LineReader();
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool interactive() const { return el_ != nullptr; }
  // Where the prompt is drawn (interactive only).
  FILE* screen() const { return screen_; }
  // One line without its newline. Interrupted: interrupt() was called while
  // waiting (the typed line is dropped); Eof: Ctrl-D or end of input.
  Status read(const std::string& prompt, std::string& line);
  // Adds a message to the history (Up recalls it).
  void remember(const std::string& message);

  // Ends the read() in progress, or the next one, as Interrupted: for a
  // SIGINT handler (async-signal-safe). A flag alone would be lost when the
  // signal comes while libedit is not blocked in read(2), e.g. drawing the
  // prompt: the terminal has already flushed the typed line, and nothing
  // would end the wait.
  static void interrupt();

 private:
  static const char* prompt_of(editline* el);
  static int read_char(editline* el, wchar_t* out);
  static int read_byte(LineReader* self, char* byte);

  editline* el_ = nullptr;
  FILE* screen_ = nullptr;
  std::string unread_;  // bytes read after an invalid one, decoded next
  history* hist_ = nullptr;
  std::string prompt_;
  bool interrupted_ = false;
};

}  // namespace qinfer::cli
