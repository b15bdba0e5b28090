// The OpenAI-compatible HTTP API (cpp-httplib): routes, the API key, body
// limits, errors in OpenAI's shape, and the request log. HTTP threads parse,
// render the chat template and tokenize; the engine loop sees token ids only.
// It listens before the model is loaded: until set_ready(), /health answers
// 503 and every other route 503 "loading".
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_loop.h"
#include "server/openai_request.h"

namespace qinfer::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (see port())
  std::string api_key;  // "" = no authentication
  // Origins whose pages a browser lets read the answers (CORS); "*" = any.
  // None by default: any web page could otherwise use a server on localhost.
  std::vector<std::string> allowed_origins;
  size_t max_body_bytes = 8u << 20;
  int http_threads = 64;  // connections served at once
  // How long a request waits for its first token before its answer (200)
  // begins: only until then can a failure be a status (400, 500).
  std::chrono::milliseconds status_wait{1000};
  // After that, a JSON answer still being computed gets a space this often:
  // a write is how a client that left is noticed (and its request
  // cancelled), and it keeps a proxy's read timeout from cutting the answer.
  std::chrono::milliseconds space_interval{1000};
  // POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's, behind
  // its VLLM_ALLOW_RUNTIME_LORA_UPDATING): off by default, since a client
  // then names a directory on the server for it to read.
  bool runtime_lora_updating = false;
  // Chat and completion requests' fields this server does not know are
  // dropped (and logged), as vLLM and llama-server drop them, instead of
  // refused with a 400 as OpenAI's API does: for clients written for other
  // servers, which send their own sampling settings.
  bool ignore_unknown_fields = false;
  // vLLM's --scheduling-policy priority: requests' "priority" orders the
  // engine's queues (lower first). Off (first come, first served), a priority
  // other than 0 is refused: a client would otherwise put itself ahead of
  // the others.
  bool priority_scheduling = false;
};

class HttpServer {
 public:
  explicit HttpServer(const ServerOptions& options);
  ~HttpServer();

  // Binds the address; Error naming it when it is taken or invalid.
  void bind();
  int port() const;
  // Serves until stop(); returns once every connection's handler is done.
  void serve();
  // Stops accepting; safe from any thread (a signal watcher). Answers being
  // written go on (drain the engine loop to end them); a request that comes
  // on a connection kept alive from before gets 503.
  void stop();

  // Completion answers begun and not yet all written (the drain ends their
  // generation; a slow reader may still be taking the text).
  int answers_being_written() const;

  // The model is loaded: requests are served from now on.
  void set_ready(const ServedModel& model, engine::EngineLoop& loop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::server
