// qinfer run-batch: a file of OpenAI Batch API requests through the HTTP API,
// as vLLM's run-batch. Each input line is {"custom_id", "method": "POST",
// "url", "body"}; each output line, in input order, is what OpenAI's batch
// output holds: {"id", "custom_id", "response": {"status_code", "request_id",
// "body"}, "error": null}, the body being exactly the server's answer to that
// request (a 400's error object included); "response": null with an "error"
// for a line that names no request. The requests go to the server's own
// routes on a loopback port (a key of this run's making guards it), as many
// at once as the engine runs in parallel plus a few queued, so the engine
// batches them as it batches a server's clients.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "chat_template_flags.h"
#include "commands.h"
#include "engine_flags.h"
#include "io/model_dir.h"
#include "load_flags.h"
#include "lora_modules_flag.h"
#include "model_files.h"
#include "served_engine.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "standard_input.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

using nlohmann::ordered_json;

struct RunBatchArgs {
  std::string model, served_name, input = "-", output = "-";
  LoraModulesFlag lora_modules;
  LoadFlags load;
  EngineFlags engine;
  DraftFlags draft;
  ChatTemplateFlags chat_template;
  int64_t ctx = 0;
};

// The routes a batch line may name: those that answer one request with one
// JSON document (vLLM's run-batch takes chat, embeddings, score and rerank).
const std::set<std::string>& batch_urls() {
  static const std::set<std::string> urls = {"/v1/chat/completions",
                                             "/v1/completions",
                                             "/v1/responses",
                                             "/v1/embeddings",
                                             "/v1/rerank",
                                             "/v2/rerank",
                                             "/rerank",
                                             "/v1/score",
                                             "/score",
                                             "/v1/classify",
                                             "/classify"};
  return urls;
}

struct BatchLine {
  int64_t line = 0;
  ordered_json custom_id;  // null until read
  std::string url, body;   // the request, when the line names one
  std::string refusal;     // why it names none
  // The answer: a status and the server's body (or why the request failed).
  std::optional<int> status;
  std::string answer;
  bool done = false;
};

// One input line into a request, or its refusal.
BatchLine read_line(const std::string& text, int64_t line_no) {
  BatchLine b;
  b.line = line_no;
  try {
    const ordered_json j = server::parse_json_body(text, "the line");
    if (j.contains("custom_id")) b.custom_id = j["custom_id"];
    for (const auto& item : j.items())
      if (item.key() != "custom_id" && item.key() != "method" && item.key() != "url" && item.key() != "body")
        fail("unknown field \"", item.key(), "\" (a line holds custom_id, method, url, body)");
    if (!j.contains("custom_id") || !j["custom_id"].is_string()) fail("\"custom_id\" must be a string");
    if (!j.contains("method") || j["method"] != "POST") fail("\"method\" must be \"POST\"");
    if (!j.contains("url") || !j["url"].is_string()) fail("\"url\" must be a string");
    b.url = j["url"].get<std::string>();
    if (!batch_urls().count(b.url)) {
      std::string list;
      for (const std::string& u : batch_urls()) list += (list.empty() ? "" : ", ") + u;
      fail("\"url\" must be one of ", list, ", not \"", b.url, "\"");
    }
    if (!j.contains("body") || !j["body"].is_object()) fail("\"body\" must be a JSON object (the request)");
    if (const ordered_json& body = j["body"]; body.contains("stream") && !body["stream"].is_null()) {
      if (!body["stream"].is_boolean()) fail("\"body\": 'stream' must be false (a batch answers each request whole)");
      if (body["stream"] == true) fail("\"body\" asks for a stream; a batch answers each request whole");
    }
    b.body = j["body"].dump();
  } catch (const Error& e) {
    b.refusal = "line " + std::to_string(line_no) + ": " + e.what();
  }
  return b;
}

template <class Random>
std::string random_hex(Random& random, int bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < bytes; ++i) {
    const auto v = static_cast<unsigned>(random() & 0xff);
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

// OpenAI's batch output line for `b`.
ordered_json output_line(const BatchLine& b, std::mt19937_64& rng) {
  ordered_json out;
  out["id"] = "batch_req_" + random_hex(rng, 12);
  out["custom_id"] = b.custom_id;
  if (!b.refusal.empty() || !b.status) {
    out["response"] = nullptr;
    out["error"] = {{"code", b.refusal.empty() ? "request_failed" : "invalid_request"},
                    {"message", b.refusal.empty() ? b.answer : b.refusal}};
    return out;
  }
  ordered_json body = ordered_json::parse(b.answer, nullptr, false);
  if (body.is_discarded()) body = b.answer;  // not JSON: kept as text
  std::string request_id = body.is_object() && body.contains("id") && body["id"].is_string()
                               ? body["id"].get<std::string>()
                               : "req_" + random_hex(rng, 12);
  out["response"] = {{"status_code", *b.status}, {"request_id", request_id}, {"body", std::move(body)}};
  out["error"] = nullptr;
  return out;
}

std::vector<BatchLine> read_input(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path == "-") {
    require_readable_stdin();
  } else {
    if (std::filesystem::is_directory(path)) fail(path, " is a directory, not a file");
    file.open(path);
    if (!file) fail("cannot read ", path, ": ", std::strerror(errno));
    in = &file;
  }
  std::vector<BatchLine> lines;
  int64_t line_no = 0;
  for (std::string text; std::getline(*in, text);) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(read_line(text, line_no));
  }
  if (path == "-")
    require_stdin_read_without_error();
  else if (file.bad())
    fail("reading ", path, " failed");
  return lines;
}

// Where the results go: standard output, or a file checked before the model
// loads (a path that cannot be written fails at once) and opened, emptied,
// after it (a load that fails leaves an earlier file as it was, and makes
// none). What is not a plain file (a FIFO, a device) is opened then only:
// opening a FIFO to check it would hand its reader an end of file.
class ResultSink {
 public:
  explicit ResultSink(std::string path) : path_(std::move(path)) {
    if (path_ == "-") return;
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) fail("cannot write ", path_, ": it is a directory, not a file");
      if (S_ISREG(st.st_mode) && ::access(path_.c_str(), W_OK) != 0)
        fail("cannot write ", path_, ": ", std::strerror(errno));
      return;
    }
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    if (::stat(dir.c_str(), &st) != 0) fail("cannot write ", path_, ": ", std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) fail("cannot write ", path_, ": ", dir, " is not a directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) fail("cannot write ", path_, ": ", std::strerror(errno));
  }
  ~ResultSink() {
    if (file_ && file_ != stdout) std::fclose(file_);
  }
  void open() {
    file_ = path_ == "-" ? stdout : std::fopen(path_.c_str(), "w");
    if (!file_) fail("cannot write ", path_, ": ", std::strerror(errno));
  }
  // False once a write failed (a closed pipe, a full disk).
  bool write(const std::string& line) {
    return std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  }
  bool close() {
    FILE* f = std::exchange(file_, nullptr);
    return f == stdout || std::fclose(f) == 0;
  }
  std::string name() const { return path_ == "-" ? "standard output" : path_; }

 private:
  std::string path_;
  FILE* file_ = nullptr;
};

// Answers held at most this far ahead of the line being written (or twice
// the senders, if more): a slow request at the head of a long file does not
// keep every later answer in memory (an embedding's is tens of kB).
constexpr size_t kAheadOfOutput = 256;

void run_run_batch(RunBatchArgs& a) {
  a.engine.validate();
  a.draft.validate();
  a.chat_template.read();
  if (a.ctx < 0) usage_fail("--ctx must be positive (or 0: the model's maximum)");
  LoadOptions load_options = a.load.options();
  load_options.lora_modules = a.lora_modules.adapters(a.served_name.empty() ? a.model : a.served_name);
  std::vector<BatchLine> lines = read_input(a.input);
  ResultSink sink(a.output);
  if (a.output != "-")
    refuse_model_file("-o", a.output, model_dirs(resolve_model_dir(a.model), load_options, a.draft.model));
  ::signal(SIGPIPE, SIG_IGN);  // a closed output is a failed write, reported

  // As many requests at once as the engine runs plus a few for the step
  // after; the engine's queue has room for all of their choices and inputs
  // (n, lists of prompts): a 503 would be a lost line.
  const int senders = static_cast<int>(std::min<int64_t>(a.engine.parallel + 4, 1024));
  Timer timer;
  ServedEngine loaded = load_served_engine(a.model, a.served_name, load_options, a.engine, a.draft, a.chat_template,
                                           a.ctx, int64_t{1} << 20);
  print_served_notes("run-batch", loaded, a.ctx);

  std::random_device key_source;
  server::ServerOptions http_options;
  http_options.host = "127.0.0.1";
  http_options.port = 0;
  http_options.api_key = random_hex(key_source, 32);
  http_options.http_threads = senders + 2;
  http_options.max_body_bytes = size_t{1} << 30;  // the file's lines are this user's own
  http_options.priority_scheduling = true;        // ... and so are their priorities
  // The answer's status waits for the request's end (a failure stays a
  // status), and no spaces keep a client alive: this one waits.
  http_options.status_wait = std::chrono::hours(24 * 365);
  http_options.space_interval = std::chrono::hours(24 * 365);
  server::HttpServer http(http_options);
  http.bind();
  http.set_ready(*loaded.served, *loaded.loop);
  sink.open();  // last before the threads: nothing that can fail is left
  std::thread serving([&] { http.serve(); });

  std::mutex mutex;
  std::condition_variable changed;
  size_t next = 0, written = 0;
  const size_t ahead = std::max<size_t>(kAheadOfOutput, 2 * static_cast<size_t>(senders));
  bool stopping = false;
  auto send = [&] {
    httplib::Client client("127.0.0.1", http.port());
    client.set_read_timeout(std::chrono::hours(24 * 365));
    client.set_write_timeout(std::chrono::hours(1));
    const httplib::Headers headers = {{"Authorization", "Bearer " + http_options.api_key}};
    for (;;) {
      size_t i;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stopping || next >= lines.size() || next < written + ahead; });
        if (stopping || next >= lines.size()) return;
        i = next++;
      }
      BatchLine& b = lines[i];
      std::optional<int> status;
      std::string answer;
      if (b.refusal.empty()) {
        try {
          if (httplib::Result r = client.Post(b.url, headers, b.body, "application/json")) {
            status = r->status;
            answer = std::move(r->body);
          } else {
            answer = "the request failed: " + httplib::to_string(r.error());
          }
        } catch (const std::exception& e) {  // out of memory: this line's failure, not the run's end
          status.reset();
          answer = std::string("the request failed: ") + e.what();
        }
      }
      std::lock_guard lock(mutex);
      b.status = status;
      b.answer = std::move(answer);
      b.done = true;
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  // Whatever ends the writing (a failed write, an exception), the senders
  // stop taking lines and every thread is joined before this returns.
  auto stop_all = [&] {
    {
      std::lock_guard lock(mutex);
      stopping = true;
      changed.notify_all();
    }
    for (std::thread& t : threads) t.join();
    http.stop();
    serving.join();
  };
  int64_t ok = 0, failed = 0;
  bool write_failed = false;
  try {
    for (int t = 0; t < senders; ++t) threads.emplace_back(send);
    std::mt19937_64 ids(std::random_device{}());
    for (BatchLine& b : lines) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return b.done; });
      }
      (b.status && *b.status == 200 ? ok : failed) += 1;
      const std::string text =
          output_line(b, ids).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      b.answer = std::string();
      b.body = std::string();
      if (!sink.write(text)) {
        write_failed = true;
        break;
      }
      std::lock_guard lock(mutex);
      ++written;
      changed.notify_all();
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  if (!sink.close() || write_failed) fail("writing ", sink.name(), " failed");
  std::fprintf(stderr, "qinfer run-batch: %lld requests in %.2f s: %lld answered 200, %lld did not\n",
               static_cast<long long>(lines.size()), timer.seconds(), static_cast<long long>(ok),
               static_cast<long long>(failed));
}

}  // namespace

void add_run_batch_command(CLI::App& app) {
  auto a = std::make_shared<RunBatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run-batch",
      "OpenAI Batch API requests through the HTTP API, as vLLM's run-batch: each input line {custom_id, method, "
      "url, body}, each output line {id, custom_id, response: {status_code, request_id, body}, error}");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")
      ->required();
  cmd->add_option("--served-model-name", a->served_name, "The model name requests use (default: -m as given)");
  cmd->add_option("-i,--input-file", a->input, "The requests, one JSON object a line ('-': standard input)")
      ->capture_default_str();
  cmd->add_option("-o,--output-file", a->output, "The results, one a line in input order ('-': standard output)")
      ->capture_default_str();
  a->lora_modules.add_option(cmd);
  a->engine.add_options(cmd);
  a->draft.add_options(cmd);
  a->chat_template.add_options(cmd, /*with_default_kwargs=*/true);
  cmd->add_option("--ctx", a->ctx, "Positions per sequence, prompt + completion (0: the model's maximum)")
      ->capture_default_str();
  a->load.add_options(cmd);
  cmd->callback([a] { run_run_batch(*a); });
}

}  // namespace qinfer::cli
