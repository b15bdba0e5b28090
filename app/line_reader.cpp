#include "line_reader.h"

#include <fcntl.h>
#include <histedit.h>
#include <langinfo.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <clocale>
#include <cstdio>
#include <cstring>
#include <cwchar>
#include <iostream>
#include <string_view>

#include "util/error.h"

namespace qinfer::cli {

namespace {

// Written by interrupt(), watched by read_char(): a self-pipe, the one wakeup
// a signal handler can give that a later wait still sees.
int g_wakeup[2] = {-1, -1};

void drain_wakeups() {
  char buf[64];
  while (g_wakeup[0] >= 0 && ::read(g_wakeup[0], buf, sizeof buf) > 0) {
  }
}

}  // namespace

LineReader::LineReader() {
  if (!::isatty(STDIN_FILENO)) return;
  FILE* screen = ::isatty(STDOUT_FILENO) ? stdout : ::isatty(STDERR_FILENO) ? stderr : nullptr;
  if (!screen) return;
  if (g_wakeup[0] < 0 && ::pipe2(g_wakeup, O_NONBLOCK | O_CLOEXEC) != 0) return;  // plain reads
  el_ = el_init("qinfer", stdin, screen, stderr);
  if (!el_) return;  // no usable terminal description: plain reads
  screen_ = screen;
  // libedit decodes keys in the locale's encoding. The model reads and
  // writes UTF-8, so the terminal is taken as UTF-8 even where no locale
  // says so (LANG unset: the C locale, ASCII only, dropped "é").
  std::setlocale(LC_CTYPE, "");
  if (std::string_view(nl_langinfo(CODESET)) != "UTF-8") std::setlocale(LC_CTYPE, "C.UTF-8");
  hist_ = history_init();
  HistEvent ev;
  history(hist_, &ev, H_SETSIZE, 1000);
  history(hist_, &ev, H_SETUNIQUE, 1);
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_PROMPT, &LineReader::prompt_of);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_HIST, history, hist_);
  el_set(el_, EL_SIGNAL, 0);  // the chat's own SIGINT handler runs, and calls interrupt()
  el_set(el_, EL_GETCFN, &LineReader::read_char);
  el_source(el_, nullptr);  // ~/.editrc, as every libedit program
}

LineReader::~LineReader() {
  if (el_) el_end(el_);
  if (hist_) history_end(hist_);
}

void LineReader::interrupt() {
  if (g_wakeup[1] >= 0) {
    const ssize_t ignored = ::write(g_wakeup[1], "", 1);
    (void)ignored;  // a full pipe already holds a wakeup
  }
}

const char* LineReader::prompt_of(editline* el) {
  LineReader* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return self->prompt_.c_str();
}

// libedit's character source: one character from stdin, decoded from the
// terminal's multibyte encoding, unless a wakeup arrives first (then -1, and
// el_gets returns). 1: a character, 0: end of input, -1: error or wakeup.
int LineReader::read_char(editline* el, wchar_t* out) {
  LineReader* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  char bytes[MB_LEN_MAX];
  size_t n = 0;
  for (;;) {
    if (!self->unread_.empty()) {  // bytes that followed an invalid one: decoded again, in order
      bytes[n++] = self->unread_.front();
      self->unread_.erase(0, 1);
    } else if (const int got = read_byte(self, &bytes[n]); got <= 0) {
      return got;
    } else {
      ++n;
    }
    std::mbstate_t state{};
    wchar_t wc = 0;
    const size_t used = std::mbrtowc(&wc, bytes, n, &state);
    if (used == static_cast<size_t>(-2) && n < sizeof bytes) continue;  // the rest of the character
    if (used > n) {  // invalid: the first byte is U+FFFD, what followed it is read again
      self->unread_.insert(0, bytes + 1, n - 1);
      wc = L'\uFFFD';
    }
    *out = wc;
    return 1;
  }
}

// One byte from stdin into *byte, unless a wakeup arrives first: 1, 0 at the
// end of input, -1 on an error or a wakeup (then interrupted_ is set).
int LineReader::read_byte(LineReader* self, char* byte) {
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wakeup[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;  // a signal's wakeup shows in the pipe
      return -1;
    }
    if (fds[1].revents & POLLIN) {
      drain_wakeups();
      self->interrupted_ = true;
      return -1;
    }
    const ssize_t got = ::read(STDIN_FILENO, byte, 1);
    if (got < 0 && errno == EINTR) continue;
    return static_cast<int>(got);
  }
}

LineReader::Status LineReader::read(const std::string& prompt, std::string& line) {
  line.clear();
  if (!el_) {
    if (std::getline(std::cin, line)) return Status::Line;
    const int error = errno;
    if (!std::ferror(stdin)) return Status::Eof;
    std::cin.clear();
    std::clearerr(stdin);
    if (error == EINTR) return Status::Interrupted;  // Ctrl-C (its handler has no SA_RESTART)
    fail("reading standard input failed: ", std::strerror(error));
  }
  drain_wakeups();  // a Ctrl-C that stopped the last reply is spent
  prompt_ = prompt;
  interrupted_ = false;
  int count = 0;
  const char* got = el_gets(el_, &count);
  if (interrupted_) return Status::Interrupted;
  if (!got) {  // Ctrl-D: the line ends, as a shell's or Python's does (the shell's prompt came after ours)
    std::fputc('\n', screen_);
    std::fflush(screen_);
    return Status::Eof;
  }
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
