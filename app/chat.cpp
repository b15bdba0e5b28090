// qinfer chat: a multi-turn conversation through the model's chat template,
// streaming replies. Works on a terminal and through pipes (scripts, tests).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "runtime/conversation.h"
#include "runtime/model_bundle.h"
#include "runtime/text_generation.h"
#include "sampling_options.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

struct ChatArgs {
  std::string model, system;
  bool no_think = false, hide_thinking = false, print_prompt_ids = false;
  int64_t max_new_tokens = 4096;
  int threads = 0;
  SamplingOverrides sampling;
};

void write_out(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

void run_chat(const ChatArgs& a) {
  const ModelBundle bundle = load_model_bundle(a.model);
  const Tokenizer& tok = bundle.require_tokenizer();
  Conversation conv(bundle.require_chat_template(), tok, a.system,
                    a.no_think ? std::optional<bool>(false) : std::nullopt);
  ThreadPool pool(a.threads);
  Session session(*bundle.model, pool);
  GenerationOptions opts;
  opts.sampling = a.sampling.apply(bundle.default_sampling());
  opts.eos_ids = bundle.eos_ids();
  const int64_t context = bundle.model->config().max_position_embeddings;

  // Ctrl-C interrupts the reply being generated, not the program.
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);

  const bool tty_in = isatty(STDIN_FILENO), tty_out = isatty(STDOUT_FILENO);
  if (tty_in)
    std::fprintf(stderr, "qinfer chat with %s (thinking %s). /reset starts over, /exit quits, Ctrl-C stops a reply.\n",
                 bundle.dir.c_str(), a.no_think ? "off" : "on");
  int turn = 0;
  std::string line;
  for (;;) {
    if (tty_in) write_out("> ");
    if (!std::getline(std::cin, line)) {
      if (std::cin.eof()) break;
      std::cin.clear();  // interrupted at the prompt
      g_interrupted = false;
      write_out("\n");
      continue;
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      conv.reset();
      session.reset();
      std::fprintf(stderr, "[conversation reset]\n");
      continue;
    }

    const std::vector<int32_t> prompt = conv.user_turn(line);
    ++turn;
    if (a.print_prompt_ids) std::fprintf(stderr, "%s\n", nlohmann::json{{"turn", turn}, {"prompt_ids", prompt}}.dump().c_str());
    if (static_cast<int64_t>(prompt.size()) >= context) {
      conv.drop_last_user_turn();
      std::fprintf(stderr, "[the conversation (%zu tokens) fills the context of %lld tokens: /reset to start over]\n",
                   prompt.size(), static_cast<long long>(context));
      continue;
    }
    opts.max_new_tokens = std::min<int64_t>(a.max_new_tokens, context - static_cast<int64_t>(prompt.size()));
    g_interrupted = false;
    ThinkSplitter splitter;
    const TextGenerationResult r = generate_text(session, tok, prompt, opts, {}, [&](std::string_view piece) {
      for (const ThinkSplitter::Part& p : splitter.push(piece)) {
        if (!p.thinking) write_out(p.text);
        else if (!a.hide_thinking) write_out(tty_out ? "\x1b[2m" + p.text + "\x1b[0m" : p.text);
      }
      return !g_interrupted.load();
    });
    write_out("\n");
    conv.assistant_reply(r.text);
    std::fprintf(stderr, "[%zu tokens, %.1f tok/s%s]\n", r.gen.ids.size(), r.gen.decode_tok_s(),
                 r.cancelled ? ", stopped" : r.gen.reason == StopReason::ContextFull ? ", context full: /reset" : "");
  }
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "Chat with the model through its chat template: one message per line on stdin, replies streamed");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")->required();
  cmd->add_option("--system", a->system, "System prompt");
  cmd->add_flag("--no-think", a->no_think, "Disable Qwen3's thinking (enable_thinking=false); /think and /no_think in a message switch per turn");
  cmd->add_flag("--hide-thinking", a->hide_thinking, "Do not print the reasoning (it is dimmed on a terminal otherwise)");
  cmd->add_option("-n,--max-tokens", a->max_new_tokens, "Maximum tokens per reply")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all hardware threads)");
  cmd->add_flag("--print-prompt-ids", a->print_prompt_ids, "Print each turn's prompt ids as a JSON line on stderr");
  a->sampling.add_options(cmd);
  cmd->callback([a] { run_chat(*a); });
}

}  // namespace qinfer::cli
