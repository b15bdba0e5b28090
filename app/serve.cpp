// qinfer serve: the OpenAI-compatible HTTP server on the batching engine. It
// listens at once (/health answers 503 while the model loads), serves until
// SIGINT or SIGTERM, then stops accepting, lets in-flight requests (queued
// ones included) finish for --shutdown-timeout seconds, cancels the rest and
// exits 0; a second signal exits at once, and one while the model loads too.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "chat_template_flags.h"
#include "commands.h"
#include "engine/engine_loop.h"
#include "engine_flags.h"
#include "load_flags.h"
#include "lora_modules_flag.h"
#include "served_engine.h"
#include "server/http_server.h"
#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

constexpr int64_t kMaxQueue = int64_t{1} << 20;
// Threads for connections at most: each takes a stack, and a bound the
// system refuses after minutes of starting them helps nobody.
constexpr int kMaxHttpThreads = 1 << 14;

struct ServeArgs {
  std::string model, served_name;
  LoraModulesFlag lora_modules;
  server::ServerOptions http;
  LoadFlags load;
  EngineFlags engine;
  DraftFlags draft;
  ChatTemplateFlags chat_template;
  int64_t max_queue = 256, ctx = 0;
  double shutdown_timeout = 10;
  std::string scheduling_policy = "fcfs";
  bool api_key_given = false, served_name_given = false;
};

void run_serve(ServeArgs& a) {
  a.engine.validate();
  a.draft.validate();
  a.chat_template.read();
  if (a.max_queue < 0 || a.max_queue > kMaxQueue)
    usage_fail("--max-queue must be between 0 and ", kMaxQueue, ", got ", a.max_queue);
  if (a.ctx < 0) usage_fail("--ctx must be positive (or 0: the model's maximum)");
  if (!(a.shutdown_timeout >= 0 && a.shutdown_timeout <= 86400))
    usage_fail("--shutdown-timeout must be between 0 and 86400 seconds, got ", a.shutdown_timeout);
  if (a.scheduling_policy != "fcfs" && a.scheduling_policy != "priority")
    usage_fail("--scheduling-policy must be fcfs or priority, got '", a.scheduling_policy, "'");
  if (a.http.http_threads < 0 || a.http.http_threads > kMaxHttpThreads)
    usage_fail("--http-threads must be between 0 (--parallel + --max-queue + 16) and ", kMaxHttpThreads, ", got ",
               a.http.http_threads);
  if (a.http.port < 0 || a.http.port > 65535) usage_fail("--port must be between 0 and 65535, got ", a.http.port);
  if (a.http.host.empty()) usage_fail("--host is empty (127.0.0.1: this host only; 0.0.0.0: every interface)");
  if (a.http.max_body_bytes == 0) usage_fail("--max-body must be at least 1 byte (every request would get 413)");
  // `--api-key "$KEY"` with KEY unset must not serve without a key.
  if (a.api_key_given && a.http.api_key.empty()) usage_fail("--api-key is empty: give the key, or leave the flag out");
  // A key a header cannot carry would refuse every request.
  if (std::any_of(a.http.api_key.begin(), a.http.api_key.end(),
                  [](char c) { return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f; }))
    usage_fail("--api-key holds a control character (a newline?): no Authorization header can carry it");
  if (a.served_name_given && a.served_name.empty())
    usage_fail("--served-model-name is empty: give the name requests use, or leave the flag out (-m as given)");
  LoadOptions load_options = a.load.options();
  load_options.lora_modules = a.lora_modules.adapters(a.served_name.empty() ? a.model : a.served_name);

  // Signals are taken by sigwait below, never by a handler on a random thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client that vanished is a failed write, not the end of the server

  // Each request the engine holds, running or waiting, keeps its connection's
  // thread; beyond those, spare threads keep /health and /metrics answering.
  server::ServerOptions http_options = a.http;
  http_options.priority_scheduling = a.scheduling_policy == "priority";
  if (http_options.http_threads == 0)
    http_options.http_threads =
        static_cast<int>(std::min<int64_t>(a.engine.parallel + a.max_queue + 16, kMaxHttpThreads));
  server::HttpServer http(http_options);
  http.bind();
  std::thread serving([&] { http.serve(); });
  // While the model loads (seconds to minutes), a stop signal ends the process
  // at once: nothing is being served yet. write(2), not stdio: the main thread
  // may hold stderr's lock, blocked on a full pipe.
  std::atomic<bool> loading{true};
  std::thread load_watcher([&] {
    while (loading) {
      const timespec poll{0, 100'000'000};
      if (const int sig = sigtimedwait(&stop_signals, nullptr, &poll); sig > 0) {
        const std::string note = std::string("qinfer serve: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                 " while the model was loading: exiting\n";
        [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, note.data(), note.size());
        std::_Exit(0);
      }
    }
  });
  auto loaded = [&] {
    loading = false;
    load_watcher.join();
  };

  std::fprintf(stderr, "qinfer serve: listening on http://%s:%d (loading %s)\n", a.http.host.c_str(), http.port(),
               a.model.c_str());

  ServedEngine loaded_engine;
  try {
    loaded_engine = load_served_engine(a.model, a.served_name, load_options, a.engine, a.draft, a.chat_template, a.ctx,
                                       a.max_queue);
  } catch (...) {
    loaded();
    http.stop();
    serving.join();
    throw;
  }
  loaded();
  print_served_notes("serve", loaded_engine, a.ctx);
  const ModelBundle* bundle = loaded_engine.bundle.get();
  engine::EngineLoop* loop = loaded_engine.loop.get();
  const server::ServedModel* served = loaded_engine.served.get();
  const auto stats = loop->stats();
  http.set_ready(*served, *loop);
  engine::EngineOptions pool_options;  // what a block takes: the model's keys/values and its draft model's
  pool_options.block_size = a.engine.block_size;
  pool_options.draft_model = bundle->draft_model.get();
  std::fprintf(
      stderr,
      "qinfer serve: ready: model '%s'%s%s, context %lld, %d KV blocks of %d positions (%lld MiB, committed as "
      "used), %lld parallel\n",
      served->name.c_str(), adapter_list(bundle->model->adapter_names()).c_str(),
      a.draft.model.empty() ? "" : (" drafted by " + a.draft.model).c_str(), static_cast<long long>(served->context),
      stats.kv_blocks, a.engine.block_size,
      static_cast<long long>(stats.kv_blocks * engine::engine_block_bytes(*bundle->model, pool_options) >> 20),
      static_cast<long long>(a.engine.parallel));

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "qinfer serve: %s: finishing in-flight requests (at most %g s; again to exit now)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", a.shutdown_timeout);
  http.stop();  // no new connections; the answers being written go on
  std::atomic<bool> drained{false}, closed{false};
  std::thread draining([&] {
    loop->drain(std::chrono::steady_clock::now() +
                std::chrono::milliseconds(static_cast<int64_t>(a.shutdown_timeout * 1000)));
    drained = true;
  });
  // Waits for `done`, exiting at once on a second signal, or after `limit`.
  auto wait_for = [&](const std::function<bool()>& done, std::chrono::steady_clock::time_point limit) {
    while (!done() && std::chrono::steady_clock::now() < limit) {
      const timespec poll{0, 100'000'000};
      if (const int again = sigtimedwait(&stop_signals, nullptr, &poll); again > 0) {
        std::fprintf(stderr, "qinfer serve: %s again: exiting now\n", again == SIGINT ? "SIGINT" : "SIGTERM");
        std::fflush(nullptr);
        std::_Exit(128 + again);
      }
    }
    return done();
  };
  wait_for([&] { return drained.load(); }, std::chrono::steady_clock::time_point::max());
  draining.join();
  // Answers done may still be going out to slow readers: as long as the
  // write timeout lets them (30 s), not the bound below.
  wait_for([&] { return http.answers_being_written() == 0; },
           std::chrono::steady_clock::now() + std::chrono::seconds(31));
  std::thread closing([&] {
    serving.join();
    closed = true;
  });
  // Idle keep-alive connections close within 5 s; a client still sending its
  // request could hold its connection for good, so the wait is bounded.
  if (!wait_for([&] { return closed.load(); }, std::chrono::steady_clock::now() + std::chrono::seconds(7))) {
    std::fprintf(stderr, "qinfer serve: a connection is still open (a client still sending its request); exiting\n");
    std::fflush(nullptr);
    std::_Exit(0);
  }
  closing.join();
  std::fprintf(stderr, "qinfer serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  a->http.http_threads = 0;  // derived from --parallel and --max-queue unless given
  CLI::App* cmd = app.add_subcommand("serve",
                                     "OpenAI-compatible HTTP server on the batching engine: /v1/chat/completions, "
                                     "/v1/completions, /v1/responses, /v1/embeddings, /v1/rerank, /classify, "
                                     "/score, /v1/models, /health, /metrics, /tokenize, /detokenize");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")
      ->required();
  cmd->add_option("--served-model-name", a->served_name, "The model name requests use (default: -m as given)")
      ->each([a](const std::string&) { a->served_name_given = true; });
  a->lora_modules.add_option(cmd);  // /v1/models lists them
  cmd->add_flag("--allow-runtime-lora-updating", a->http.runtime_lora_updating,
                "Let clients add and remove LoRA adapters by directory: POST /v1/load_lora_adapter "
                "{lora_name, lora_path}, /v1/unload_lora_adapter {lora_name} (vLLM's; the server reads any path "
                "named)");
  cmd->add_option("--host", a->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", a->http.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--api-key", a->http.api_key,
                  "Require 'Authorization: Bearer KEY' or 'X-Api-Key: KEY' (/health and /metrics stay open)")
      ->each([a](const std::string&) { a->api_key_given = true; });
  cmd->add_flag(
      "--ignore-unknown-fields", a->http.ignore_unknown_fields,
      "Take chat, completion and responses requests with fields this server does not know (other servers' sampling "
      "settings), dropping and logging those fields, as vLLM and llama-server do; by default they are "
      "refused (400) as OpenAI refuses them");
  cmd->add_option("--scheduling-policy", a->scheduling_policy,
                  "fcfs: requests run first come, first served, and a request's 'priority' other than 0 is refused; "
                  "priority: lower 'priority' runs first and is preempted last, then arrival (vLLM's)")
      ->capture_default_str();
  cmd->add_option("--allowed-origins", a->http.allowed_origins,
                  "Origins (comma-separated, '*' = any) whose web pages may call this server from a browser (CORS); "
                  "default none")
      ->delimiter(',');
  a->engine.add_options(cmd);
  a->draft.add_options(cmd);
  a->chat_template.add_options(cmd, /*with_default_kwargs=*/true);
  cmd->add_option("--max-queue", a->max_queue, "Requests waiting beyond --parallel; more get 503 + Retry-After")
      ->capture_default_str();
  cmd->add_option("--ctx", a->ctx, "Positions per sequence, prompt + completion (0: the model's maximum)")
      ->capture_default_str();
  cmd->add_option("--max-body", a->http.max_body_bytes, "Largest request body in bytes (more: 413)")
      ->capture_default_str();
  cmd->add_option("--http-threads", a->http.http_threads,
                  "Connections served at once (0: --parallel + --max-queue + 16, so that every request the engine "
                  "holds has one and /health, /metrics still answer)")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", a->shutdown_timeout,
                  "Seconds in-flight requests may take to finish after SIGINT/SIGTERM")
      ->capture_default_str();
  a->load.add_options(cmd);
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace qinfer::cli
