#include "line_reader.h"

#include <histedit.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

namespace qinfer::cli {

LineReader::LineReader() {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) return;
  el_ = el_init("qinfer", stdin, stdout, stderr);
  if (!el_) return;  // no usable terminal description: plain reads
  hist_ = history_init();
  HistEvent ev;
  history(hist_, &ev, H_SETSIZE, 1000);
  history(hist_, &ev, H_SETUNIQUE, 1);
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_PROMPT, &LineReader::prompt_of);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_HIST, history, hist_);
  // The chat's own SIGINT handler runs: a Ctrl-C makes read() fail with EINTR
  // (libedit retries it only with EL_SAFEREAD, left off), so el_gets returns.
  el_set(el_, EL_SIGNAL, 0);
  el_source(el_, nullptr);  // ~/.editrc, as every libedit program
}

LineReader::~LineReader() {
  if (el_) el_end(el_);
  if (hist_) history_end(hist_);
}

const char* LineReader::prompt_of(editline* el) {
  LineReader* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return self->prompt_.c_str();
}

LineReader::Status LineReader::read(const std::string& prompt, std::string& line) {
  line.clear();
  if (!el_) {
    if (std::getline(std::cin, line)) return Status::Line;
    if (std::cin.eof()) return Status::Eof;
    std::cin.clear();
    return Status::Interrupted;
  }
  prompt_ = prompt;
  int count = 0;
  errno = 0;
  const char* got = el_gets(el_, &count);
  if (!got) return count < 0 && errno == EINTR ? Status::Interrupted : Status::Eof;
  line.assign(got, static_cast<size_t>(count));
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return Status::Line;
}

void LineReader::remember(const std::string& message) {
  if (!hist_ || message.empty()) return;
  HistEvent ev;
  history(hist_, &ev, H_ENTER, message.c_str());
}

}  // namespace qinfer::cli
