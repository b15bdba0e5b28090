// qinfer chat: a multi-turn conversation through the model's chat template,
// replies streamed. Each reply is one request on the batching engine, whose
// prefix cache keeps the keys/values of the conversation so far: a turn
// computes only what its prompt adds. Works on a terminal (line editing,
// history, Ctrl-C) and through pipes (scripts, tests).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "chat_template_flags.h"
#include "commands.h"
#include "engine/engine.h"
#include "generation_flags.h"
#include "line_reader.h"
#include "runtime/conversation.h"
#include "runtime/text_stream.h"
#include "standard_input.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  LineReader::interrupt();
}

constexpr const char* kHelp =
    "  /help             this list\n"
    "  /reset, /clear    start a new conversation\n"
    "  /exit, /quit      leave (Ctrl-D too)\n"
    "  /think, /no_think at the end of a message: Qwen3's switch for that turn (sent to the model)\n"
    "  a line ending in \\ continues on the next; \"\"\" on a line of its own starts and ends a block\n"
    "  Ctrl-C stops a reply, or clears the line at the prompt\n";

struct ChatArgs {
  GenerationFlags flags{-1};
  ChatTemplateFlags chat_template;
  std::string system;
  bool no_think = false, hide_thinking = false, print_prompt_ids = false;
  int64_t thinking_budget = -1;
};

// write(2), retried on EINTR: Ctrl-C's handler has no SA_RESTART (so that a
// read returns), and a write blocked on a slow terminal would fail with EINTR
// and lose its text (stdio gives up and sets the stream's error flag).
void write_out(std::string_view s) {
  std::fflush(stdout);
  while (!s.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("writing to standard output failed: ", std::strerror(errno));
    s.remove_prefix(static_cast<size_t>(n));
  }
}

void drop_trailing(std::string& s, const char* chars) {
  while (!s.empty() && std::strchr(chars, s.back())) s.pop_back();
}

// One message: a line; a line ending in \ continues on the next; a line that
// is """ starts a block that runs to the next """ line. `unfinished`: the
// input ended (or was interrupted) inside a block or after a \.
LineReader::Status read_message(LineReader& in, std::string& message, bool& unfinished) {
  message.clear();
  unfinished = false;
  std::string line;
  LineReader::Status st = in.read("> ", line);
  if (st != LineReader::Status::Line) return st;
  unfinished = true;
  drop_trailing(line, "\r");
  if (line == "\"\"\"") {
    for (bool first = true;; first = false) {
      if ((st = in.read("... ", line)) != LineReader::Status::Line) return st;
      drop_trailing(line, "\r");
      if (line == "\"\"\"") {
        unfinished = false;
        return LineReader::Status::Line;
      }
      message += (first ? "" : "\n") + line;
    }
  }
  while (!line.empty() && line.back() == '\\') {
    line.pop_back();
    message += line + "\n";
    if ((st = in.read("... ", line)) != LineReader::Status::Line) return st;
    drop_trailing(line, "\r");
  }
  unfinished = false;
  message += line;
  drop_trailing(message, " \t");
  return LineReader::Status::Line;
}

void run_chat(ChatArgs& a) {
  int threads = 0;
  a.chat_template.read();
  ModelBundle bundle = a.flags.load(threads);
  a.chat_template.apply(bundle);
  const Tokenizer& tok = bundle.require_tokenizer();
  utf8::require_valid(a.system, "the system prompt (--system)");
  Conversation conv(bundle.require_chat_template(), tok, a.system,
                    a.no_think ? std::optional<bool>(false) : std::nullopt);
  ThreadPool pool(threads);
  engine::Engine engine(*bundle.model, pool, a.flags.engine_options(bundle));
  const int64_t context = engine.context();
  GenerationOptions opts;
  opts.sampling = a.flags.sampling.apply(bundle.default_sampling());
  opts.eos_ids = bundle.eos_ids();
  // The engine ends a reply at the context itself (reason ContextFull).
  opts.max_new_tokens = a.flags.max_tokens == -1 ? context : a.flags.max_tokens;
  if (a.thinking_budget >= 0) {
    opts.thinking = {a.thinking_budget, tok.token_to_id("<think>").value_or(-1),
                     tok.token_to_id("</think>").value_or(-1), false};
    if (opts.thinking.open_id < 0 || opts.thinking.close_id < 0)
      usage_fail("--thinking-budget: this model's tokenizer has no <think> and </think> tokens");
  }

  // Ctrl-C interrupts the reply being generated, or the line being typed, not
  // the program. No SA_RESTART: a blocked read returns with EINTR.
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);

  require_readable_stdin();
  LineReader in;
  // Reasoning is dimmed where the output is a terminal that shows it: not TERM=dumb, nor with NO_COLOR set.
  const char* term = std::getenv("TERM");
  const char* no_color = std::getenv("NO_COLOR");
  const bool dim = ::isatty(STDOUT_FILENO) && !(term && std::string_view(term) == "dumb") && !(no_color && *no_color);
  if (in.interactive())
    std::fprintf(
        stderr, "qinfer chat with %s (thinking %s, context %lld, seed %llu). /help lists the commands, Ctrl-D quits.\n",
        bundle.dir.c_str(), a.no_think ? "off" : "on", static_cast<long long>(context),
        static_cast<unsigned long long>(opts.sampling.seed));
  int turn = 0;     // messages sent to the template
  int replies = 0;  // of them, replies generated: reply k samples with seed + k - 1
  // Through a pipe, a message not answered (refused, or cut by the input's
  // end) makes the exit status 1 once the others are: a script must know.
  int unanswered = 0;
  auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "[%s]\n", why.c_str());
    ++unanswered;
  };
  for (std::string message;;) {
    g_interrupted = false;
    bool unfinished = false;
    const LineReader::Status st = read_message(in, message, unfinished);
    if (st == LineReader::Status::Eof) {
      if (unfinished)
        refuse("the input ended inside a message (a \"\"\" block not closed, or a line ending in \\): not sent");
      break;
    }
    if (st == LineReader::Status::Interrupted) {
      // At the prompt, Ctrl-C clears the line; a pipe's reader stops, as programs do.
      if (!in.interactive()) {
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
      }
      std::fputc('\n', in.screen());  // past the line given up
      std::fflush(in.screen());
      continue;
    }
    if (message.empty()) continue;
    in.remember(message);
    if (message[0] == '/') {
      const std::string command = message.substr(0, message.find_first_of(" \t\n"));
      if (command == "/exit" || command == "/quit") break;
      if (command == "/help" || command == "/?") {
        std::fputs(kHelp, stderr);
        continue;
      }
      if (command == "/reset" || command == "/clear") {
        conv.reset();
        std::fprintf(stderr, "[conversation reset]\n");
        continue;
      }
      if (command != "/think" && command != "/no_think") {
        refuse("unknown command " + command + ": /help lists the commands");
        continue;
      }
    }

    if (utf8::first_invalid(message) != std::string::npos) {  // a stray byte ends this message, not the chat
      refuse("the message is not valid UTF-8 (byte offset " + std::to_string(utf8::first_invalid(message)) +
             "): not sent");
      continue;
    }
    std::vector<int32_t> prompt;
    try {
      prompt = conv.user_turn(message);
    } catch (const Error& e) {  // the template refused this message (its raise_exception): the chat goes on
      refuse(std::string(e.what()) + ": not sent");
      continue;
    }
    ++turn;
    if (a.print_prompt_ids)
      std::fprintf(stderr, "%s\n", nlohmann::json{{"turn", turn}, {"prompt_ids", prompt}}.dump().c_str());
    if (static_cast<int64_t>(prompt.size()) >= context) {
      conv.drop_last_user_turn();
      refuse("the conversation (" + std::to_string(prompt.size()) + " tokens) fills the context of " +
             std::to_string(context) + " tokens: /reset to start over");
      continue;
    }
    ThinkSplitter splitter;
    auto show = [&](const std::vector<ThinkSplitter::Part>& parts) {
      for (const ThinkSplitter::Part& p : parts) {
        if (!p.thinking)
          write_out(p.text);
        else if (!a.hide_thinking)
          write_out(dim ? "\x1b[2m" + p.text + "\x1b[0m" : p.text);
      }
    };
    TextStream text(tok, a.flags.stops, [&](std::string_view piece) {
      show(splitter.push(piece));
      return true;
    });
    GenerationOptions turn_opts = opts;  // a new reply each time, the same chat for a seed
    turn_opts.sampling.seed += static_cast<uint64_t>(replies++);
    // A template that opens the reply's <think> block itself (its generation prompt ends with
    // "<think>\n"): the budget counts from the first id. Not a "<think>" a message holds.
    const size_t tail = std::min<size_t>(prompt.size(), 2);
    turn_opts.thinking.starts_open = std::find(prompt.end() - static_cast<std::ptrdiff_t>(tail), prompt.end(),
                                               opts.thinking.open_id) != prompt.end();
    const int64_t handle =
        engine.add(prompt, turn_opts, [&](int32_t id, const TokenLogprobs*) { return text.push(id); });
    while (engine.step())
      if (g_interrupted && !engine.finished(handle)) engine.cancel(handle);
    text.finish();
    show(splitter.finish());
    write_out("\n");
    const GenerationResult r = engine.result(handle);
    engine.erase(handle);
    if (r.reason == StopReason::Error) fail(r.error);
    conv.assistant_reply(text.text());
    std::fprintf(stderr, "[%lld prompt tokens (%lld cached), first token %.2f s, %zu tokens at %.1f tok/s%s]\n",
                 static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.reused_tokens), r.prefill_s,
                 r.ids.size(), r.decode_tok_s(),
                 g_interrupted                         ? ", stopped"
                 : r.reason == StopReason::ContextFull ? ", cut: the context is full, /reset to start over"
                                                       : "");
  }
  if (unanswered > 0 && !in.interactive())
    fail(unanswered, unanswered == 1 ? " message" : " messages", " of the input got no reply (see above)");
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "Chat with the model through its chat template: line editing on a terminal, one message per line "
      "through a pipe; replies streamed");
  a->flags.add_options(cmd, "Maximum tokens per reply; -1 = until eos or the context is full");
  cmd->add_option("--system", a->system, "System prompt");
  a->chat_template.add_options(cmd, /*with_default_kwargs=*/false);
  cmd->add_flag("--no-think", a->no_think,
                "Disable Qwen3's thinking (enable_thinking=false): the template closes an empty think block in "
                "every reply, so /think in a message cannot turn it back on");
  cmd->add_flag(
      "--hide-thinking", a->hide_thinking,
      "Do not print the reasoning (it is dimmed on a terminal otherwise, unless TERM=dumb or NO_COLOR is set)");
  cmd->add_option("--thinking-budget", a->thinking_budget,
                  "At most N tokens of reasoning per reply: then </think> is forced and the answer follows "
                  "(vLLM's thinking_token_budget; -1: no budget)")
      ->check(CLI::Range(int64_t{-1}, int64_t{INT32_MAX}));  // the server's thinking_token_budget range
  cmd->add_flag("--print-prompt-ids", a->print_prompt_ids, "Print each turn's prompt ids as a JSON line on stderr");
  cmd->callback([a] { run_chat(*a); });
}

}  // namespace qinfer::cli
