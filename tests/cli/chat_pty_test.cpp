// `qinfer chat` on a terminal: a pseudo-terminal stands in for the user's, so
// line editing (arrows, Ctrl-A), history (Up), Ctrl-C at the prompt (clears
// the line, stays in the chat), Ctrl-C during a reply (stops it) and Ctrl-D
// (quits) go through the real line discipline and signals.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "text/tokenizer.h"
#include "util/mapped_file.h"

using nlohmann::json;

namespace {

// A qinfer chat running on the slave side of a pseudo-terminal.
class PtyChat {
 public:
  // `locale`: LC_ALL for the chat ("" leaves the environment's; "unset": none, the C locale).
  // `model`: the checkpoint ("": tiny, with --no-think); `env`: variables set for the chat (after TERM=xterm);
  // `stdout_file`: where its standard output goes instead of the terminal ("": the terminal).
  explicit PtyChat(const std::vector<std::string>& args, const std::string& locale = "", const std::string& model = "",
                   const std::vector<std::pair<std::string, std::string>>& env = {},
                   const std::string& stdout_file = "")
      : home_("pty-home") {
    std::vector<std::string> argv = {qinfer::test::qinfer_binary(), "chat", "-m",
                                     model.empty() ? qinfer::test::data_path("models/tiny") : model,
                                     "--print-prompt-ids"};
    if (model.empty()) argv.push_back("--no-think");
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      setenv("TERM", "xterm", 1);
      setenv("HOME", home_.path().c_str(), 1);  // no user ~/.editrc
      if (locale == "unset")
        for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) unsetenv(var);
      else if (!locale.empty())
        setenv("LC_ALL", locale.c_str(), 1);
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
      if (!stdout_file.empty()) {
        const int fd = open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
        close(fd);
      }
      std::vector<char*> c;
      for (std::string& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
  }
  ~PtyChat() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }

  // Waits until the line editor has put the terminal in raw mode: libedit
  // draws the prompt first, and keys typed before that go through the
  // cooked line discipline (a Ctrl-D there reaches libedit as a NUL).
  bool editing() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (termios t{}; std::chrono::steady_clock::now() < deadline;) {
      if (tcgetattr(master_, &t) == 0 && !(t.c_lflag & ICANON)) return true;
      usleep(1000);
    }
    return false;
  }

  // Waits for the prompt, then for the editor to take keys (editing()).
  bool at_prompt() { return expect("> ") && editing(); }

  void type(const std::string& keys) { ASSERT_EQ(write(master_, keys.data(), keys.size()), ssize_t(keys.size())); }

  // Reads until `text` appears after the point the last expect() stopped at;
  // false after 60 s (a hang) or when the process closed the terminal.
  bool expect(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      const size_t at = out_.find(text, seen_);
      if (at != std::string::npos) {
        seen_ = at + text.size();
        return true;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) return false;
      out_.append(buf, static_cast<size_t>(n));
    }
  }

  // The message of each turn, decoded from the prompt ids chat prints: the
  // text between the last "user\n" and "<|im_end|>".
  std::vector<std::string> user_messages(const qinfer::Tokenizer& tok) const {
    std::vector<std::string> msgs;
    for (size_t at = out_.find("{\"prompt_ids\""); at != std::string::npos; at = out_.find("{\"prompt_ids\"", at + 1)) {
      const json j = json::parse(out_.substr(at, out_.find('}', at) - at + 1));
      const std::string text = tok.decode(j["prompt_ids"].get<std::vector<int32_t>>());
      const size_t b = text.rfind("user\n") + 5;
      msgs.push_back(text.substr(b, text.find("<|im_end|>", b) - b));
    }
    return msgs;
  }

  // The exit status, reading what it still writes; -1 when it has not
  // exited within 60 s (a hang fails the test instead of blocking it).
  int wait_exit() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        const ssize_t n = read(master_, buf, sizeof buf);
        if (n > 0) out_.append(buf, static_cast<size_t>(n));
      }
    }
    return -1;
  }
  const std::string& output() const { return out_; }

 private:
  qinfer::test::ScratchDir home_;
  int master_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string out_;
  size_t seen_ = 0;
};

}  // namespace

TEST(ChatPty, LineEditingHistoryAndCtrlCAtThePrompt) {
  PtyChat chat({"--temp", "0", "-n", "2"});
  ASSERT_TRUE(chat.expect("Ctrl-D quits.")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("abc\x1b[D\x1b[DX\x01Z\r");  // Left, Left, X, Ctrl-A, Z: "ZaXbc"
  ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("\x1b[A\r");  // Up: the previous message again
  ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("junk");
  ASSERT_TRUE(chat.expect("junk")) << chat.output();
  chat.type("\x03");  // Ctrl-C: drops the line, the chat goes on
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("ok\r");
  ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("\x04");  // Ctrl-D at an empty line quits
  EXPECT_EQ(chat.wait_exit(), 0) << chat.output();
  // A hunt finding: it quit on the prompt's line, where the shell's prompt then came.
  ASSERT_FALSE(chat.output().empty());
  EXPECT_EQ(chat.output().back(), '\n') << chat.output();

  const qinfer::Tokenizer tok = qinfer::Tokenizer::from_file(qinfer::test::data_path("tokenizer.json"));
  EXPECT_EQ(chat.user_messages(tok), (std::vector<std::string>{"ZaXbc", "ZaXbc", "ok"})) << chat.output();
}

// A hunt finding: a byte that began a character the next byte did not finish
// swallowed that next byte (here the Enter) and came out as Latin-1.
TEST(ChatPty, AnUnfinishedCharacterIsAReplacementAndTheNextKeyCounts) {
  PtyChat chat({"--temp", "0", "-n", "2"});
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("a\xC3\r");
  ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();  // typed before, Ctrl-D would be the terminal's end of file
  chat.type("\x04");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.output();
  const qinfer::Tokenizer tok = qinfer::Tokenizer::from_file(qinfer::test::data_path("tokenizer.json"));
  EXPECT_EQ(chat.user_messages(tok), (std::vector<std::string>{"a\uFFFD"})) << chat.output();
}

// A hunt finding: without a UTF-8 locale (LANG unset, as in most
// containers) libedit read typed text as ASCII, and "héllo" reached the
// model as "hllo". The terminal is read as UTF-8, as the model writes it.
TEST(ChatPty, TextIsUtf8WhateverTheLocale) {
  for (const char* locale : {"unset", "POSIX"}) {
    PtyChat chat({"--temp", "0", "-n", "2"}, locale);
    ASSERT_TRUE(chat.at_prompt()) << chat.output();
    chat.type("h\xC3\xA9llo \xE6\x97\xA5\r");
    ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
    ASSERT_TRUE(chat.at_prompt()) << chat.output();
    chat.type("\x04");
    EXPECT_EQ(chat.wait_exit(), 0) << chat.output();
    const qinfer::Tokenizer tok = qinfer::Tokenizer::from_file(qinfer::test::data_path("tokenizer.json"));
    EXPECT_EQ(chat.user_messages(tok), (std::vector<std::string>{"h\u00e9llo \u65e5"})) << locale << chat.output();
  }
}

TEST(ChatPty, CtrlCStopsAReplyAndTheChatGoesOn) {
  PtyChat chat({"--temp", "0", "-n", "30000"});  // a reply far longer than the test waits
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("Tell me everything\r");
  ASSERT_TRUE(chat.expect("{\"prompt_ids\"")) << chat.output();
  ASSERT_TRUE(chat.expect("\"turn\":1}")) << chat.output();
  chat.type("\x03");
  ASSERT_TRUE(chat.expect(", stopped]")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("/exit\r");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.output();
}

// Reasoning is dimmed on a terminal that shows it (ANSI SGR 2); a hunt
// finding: on TERM=dumb, or with NO_COLOR set (no-color.org), the escapes
// were written anyway.
TEST(ChatPty, ReasoningIsDimmedUnlessTheTerminalIsDumbOrNoColorIsSet) {
  qinfer::test::ScratchDir dir("pty-dim");
  const std::string model = dir.file("scripted");
  ASSERT_EQ(qinfer::test::run_command(qinfer::test::qinfer_binary() + " make-test-model --preset tiny --out " + model +
                                      " --script '<think>Hm.</think>Hi' 2>&1")
                .exit_code,
            0);
  const std::vector<std::pair<std::string, std::string>> envs[] = {
      {}, {{"TERM", "dumb"}}, {{"NO_COLOR", "1"}}, {{"NO_COLOR", ""}}};
  for (const auto& env : envs) {
    const std::string what = env.empty() ? "TERM=xterm" : env[0].first + "=" + env[0].second;
    PtyChat chat({"--temp", "0", "-n", "20"}, "", model, env);
    ASSERT_TRUE(chat.at_prompt()) << what << chat.output();
    chat.type("Hello\r");
    ASSERT_TRUE(chat.expect("tokens at")) << what << chat.output();
    ASSERT_TRUE(chat.at_prompt()) << what << chat.output();
    chat.type("\x04");
    EXPECT_EQ(chat.wait_exit(), 0) << what << chat.output();
    const bool dimmed = env.empty() || (env[0].first == "NO_COLOR" && env[0].second.empty());  // empty: not set
    EXPECT_EQ(chat.output().find("\x1b[2m") != std::string::npos, dimmed) << what << chat.output();
    if (!dimmed) {
      EXPECT_NE(chat.output().find("<think>Hm.</think>Hi"), std::string::npos) << what << chat.output();
    }
  }
}

// A CLI audit's finding: with standard output a file or a pipe (`chat | tee
// log`) and the user typing at a terminal, chat drew no prompt and Ctrl-C
// ended it, as when it reads a pipe. The prompt and the typed line are now
// drawn on stderr's terminal, and the file gets the replies alone.
TEST(ChatPty, WithStdoutRedirectedThePromptIsOnStderrAndTheFileHoldsTheReplies) {
  qinfer::test::ScratchDir dir("pty-tee");
  const std::string model = dir.file("scripted");
  ASSERT_EQ(qinfer::test::run_command(qinfer::test::qinfer_binary() + " make-test-model --preset tiny --out " + model +
                                      " --script 'Hi there' 2>&1")
                .exit_code,
            0);
  PtyChat chat({"--temp", "0", "-n", "20"}, "", model, {}, dir.file("replies.txt"));
  ASSERT_TRUE(chat.expect("Ctrl-D quits.")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("junk");
  ASSERT_TRUE(chat.expect("junk")) << chat.output();
  chat.type("\x03");  // Ctrl-C: drops the line, the chat goes on
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("Hello\r");
  ASSERT_TRUE(chat.expect("tokens at")) << chat.output();
  ASSERT_TRUE(chat.at_prompt()) << chat.output();
  chat.type("\x04");
  EXPECT_EQ(chat.wait_exit(), 0) << chat.output();
  EXPECT_EQ(qinfer::read_text_file(dir.file("replies.txt")), "Hi there\n");
  EXPECT_EQ(chat.output().find("Hi there"), std::string::npos) << chat.output();
}
