#include "server/http_server.h"

#include <sys/socket.h>

#include <httplib.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string_view>

#include "server/api_error.h"
#include "server/classify_api.h"
#include "server/completion_run.h"
#include "server/connection_threads.h"
#include "server/embeddings_api.h"
#include "server/metrics.h"
#include "server/prompt_only_batch.h"
#include "server/rerank_api.h"
#include "server/responses_api.h"
#include "server/score_api.h"

namespace qinfer::server {

using nlohmann::ordered_json;

namespace {

constexpr int kListenBacklog = 4096;  // httplib's own is 5: bursts of connections would be refused

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
  if (e.status == 503) res.set_header("Retry-After", "1");
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
}

// The bytes [offset, offset + length) of `text`, never past its end: httplib
// takes a Range header's bounds on trust (the pre-routing handler drops
// ranges; this is the second guard).
bool write_part(const std::string& text, size_t offset, size_t length, httplib::DataSink& sink) {
  if (offset >= text.size()) return false;
  return sink.write(text.data() + offset, std::min(length, text.size() - offset));
}

// Ends the connection once the answer is out. httplib (0.11) keeps a
// connection alive whatever the answer's Connection header says; a content
// provider that fails after writing the whole answer makes it close.
void close_after_sending(httplib::Response& res) {
  auto body = std::make_shared<const std::string>(std::move(res.body));
  res.body.clear();
  const std::string type = res.get_header_value("Content-Type");
  res.headers.erase("Content-Type");  // set again by the provider
  res.set_header("Connection", "close");
  res.set_content_provider(body->size(), type.c_str(), [body](size_t offset, size_t length, httplib::DataSink& sink) {
    write_part(*body, offset, length, sink);
    return false;
  });
}

// Whether the request has a body (a Content-Length above 0, or chunked).
bool carries_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > 0;
}

// Why the request's body cannot be framed safely (nullopt: it can), checked
// before anything reads it; such a request ends its connection. httplib 0.11
// reads a POST without a length to the connection's end, never reads a
// GET's body (left on the connection, it would be read as the next request:
// behind a proxy, every answer after it would go to the wrong client), and
// takes the first of two Content-Lengths (a proxy may take the other).
std::optional<ApiError> framing_problem(const httplib::Request& req) {
  std::string length;
  for (size_t i = 0; i < req.get_header_value_count("Content-Length"); ++i) {
    const std::string value = req.get_header_value("Content-Length", i);
    // httplib reads "abc" as 0 and "-5" as 2^64 - 5 (a 413 after a wait).
    if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos)
      return ApiError(400, "Content-Length '" + input_excerpt(value) + "' is not a number of bytes");
    if (i > 0 && value != length)
      return ApiError(400, "the request gives two Content-Lengths, " + length + " and " + value);
    length = value;
  }
  if (req.has_header("Transfer-Encoding")) {
    const std::string coding = req.get_header_value("Transfer-Encoding");
    if (req.get_header_value_count("Transfer-Encoding") > 1 || ::strcasecmp(coding.c_str(), "chunked") != 0)
      return ApiError(400, "Transfer-Encoding '" + input_excerpt(coding) + "' is not taken: only chunked");
    if (!length.empty()) return ApiError(400, "the request gives both a Content-Length and Transfer-Encoding");
    // httplib reads a chunked body for these only (a DELETE's it leaves on the connection).
    if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH")
      return ApiError(400, "a " + input_excerpt(req.method) + " request's body is taken with its Content-Length only");
  }
  if (const std::string coding = req.get_header_value("Content-Encoding");
      !coding.empty() && ::strcasecmp(coding.c_str(), "identity") != 0 && coding != "gzip" && coding != "deflate" &&
      coding != "br")
    return ApiError(415, "Content-Encoding '" + input_excerpt(coding) +
                             "' is not one this server inflates (gzip, "
                             "deflate, br)");
  const bool has_body = carries_body(req);
  if (has_body && req.get_header_value("Content-Type").rfind("multipart/form-data", 0) == 0)
    return ApiError(415, "the request body is JSON, not multipart/form-data");
  const bool read = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                    req.method == "PRI";  // the methods httplib reads a body of without a length (to the end)
  if (read && length.empty() && !req.has_header("Transfer-Encoding"))
    return ApiError(411, "a " + input_excerpt(req.method) + " needs a body with its Content-Length: the JSON request");
  if (has_body && (req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS"))
    return ApiError(400, "a " + input_excerpt(req.method) + " request carries no body");
  return std::nullopt;
}

// A refusal the pre-routing handler makes once the request's body is read
// (by the route kRefusedPath): the connection then stays usable, and a
// client still sending a large body gets the answer (a socket closed on
// unread bytes resets the connection, and the client sees no answer).
struct Refusal {
  Refusal(ApiError error, std::string allow = "", bool close = false)
      : error(std::move(error)), allow(std::move(allow)), close(close) {}
  ApiError error;
  std::string allow;  // the Allow header of a 405
  bool close;         // end the connection after it (shutting down)
};
constexpr const char* kRefusedPath = "/qinfer-refused";
// Set by the pre-routing handler for the route it sends the request to, on
// the same thread, before the route runs.
thread_local std::optional<Refusal> t_refusal;

void send_refusal(httplib::Response& res, const Refusal& r) {
  send_error(res, r.error);
  if (!r.allow.empty()) res.set_header("Allow", r.allow);
  if (r.close) close_after_sending(res);
}

void send_json(httplib::Response& res, const ordered_json& j) {
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

struct Route {
  const char* method;
  const char* path;
};
constexpr Route kRoutes[] = {{"GET", "/health"},
                             {"GET", "/metrics"},
                             {"GET", "/v1/models"},
                             {"POST", "/v1/chat/completions"},
                             {"POST", "/v1/completions"},
                             {"POST", "/v1/responses"},
                             {"POST", "/v1/embeddings"},
                             {"POST", "/rerank"},
                             {"POST", "/v1/rerank"},
                             {"POST", "/v2/rerank"},
                             {"POST", "/classify"},
                             {"POST", "/v1/classify"},
                             {"POST", "/score"},
                             {"POST", "/v1/score"},
                             {"POST", "/tokenize"},
                             {"POST", "/detokenize"},
                             {"POST", "/v1/load_lora_adapter"},
                             {"POST", "/v1/unload_lora_adapter"}};

// The methods `path` has a route for ("" when none), as an Allow header lists them.
std::string allowed_methods(const std::string& path) {
  std::string allowed;
  for (const Route& r : kRoutes)
    if (path == r.path) allowed += (allowed.empty() ? "" : ", ") + std::string(r.method);
  return allowed;
}

// Every answer is named by the request's X-Request-Id, refusals included, as
// vLLM's middleware names them (a hunt's note: a 400 found while parsing had
// no header, so the log line could not be matched to it); an id unfit to echo
// is not.
void name_answer(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.get_header_value("X-Request-Id");
  if (is_request_id(id) && !res.has_header("X-Request-Id")) res.set_header("X-Request-Id", id);
}

// A float setting as its shortest decimal (0.95, not 0.949999988079071).
double as_written(float x) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, x).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

// Compares in time that does not depend on where the strings differ, so the
// key cannot be guessed byte by byte from response times.
bool equal_in_constant_time(const std::string& given, const std::string& key) {
  if (key.empty()) return false;
  unsigned diff = given.size() != key.size();
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  return diff == 0;
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  httplib::Server http;
  std::unique_ptr<ConnectionThreads> threads;  // made by bind(), handed to httplib by serve()
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> ready{false};
  std::atomic<bool> stopping{false};
  const ServedModel* model = nullptr;
  engine::EngineLoop* loop = nullptr;
  int64_t ready_at = 0;         // when set_ready() came: the model's "created"
  std::atomic<int> answers{0};  // completion answers not yet all written
  std::unique_ptr<Metrics> metrics;
  std::mutex id_mutex;
  std::mt19937_64 id_random{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};

  void routes();
  enum class Api { Chat, Completions, Responses };
  void completion(const httplib::Request& req, httplib::Response& res, Api api);
  static void provide_as_made(const httplib::Request& req, httplib::Response& res, const char* type,
                              const httplib::ContentProviderWithoutLength& provider);
  using Outputs = std::vector<std::vector<float>>;
  void answer_prompt_only(const httplib::Request& req, httplib::Response& res,
                          const std::vector<std::vector<int32_t>>& inputs, const char* field, int32_t adapter,
                          const PromptOnlyBatch::Submit& submit, std::function<ordered_json(const Outputs&)> answer);
  void check_priority(int32_t priority) const;
  PromptOnlyBatch::Submit embed(const PromptOnlyOptions& run) const;
  PromptOnlyBatch::Submit rerank_scoring(std::shared_ptr<const RerankPrompt> prompt,
                                         const PromptOnlyOptions& run) const;
  void embeddings(const httplib::Request& req, httplib::Response& res);
  void rerank(const httplib::Request& req, httplib::Response& res);
  void classify(const httplib::Request& req, httplib::Response& res);
  void score(const httplib::Request& req, httplib::Response& res);
  void load_lora_adapter(const httplib::Request& req, httplib::Response& res);
  void unload_lora_adapter(const httplib::Request& req, httplib::Response& res);
  std::string lora_name(const ordered_json& body) const;
  bool authorized(const httplib::Request& req) const;
  std::string allowed_origin(const httplib::Request& req) const;
  // A POST route: its body read by read_body(), then `handler` with it as req.body.
  void post(const std::string& path, httplib::Server::Handler handler);
  // Reads the body, at most --max-body bytes as the route gets them (a
  // chunked body's, a compressed one's inflated), into req.body; false after
  // answering when it cannot. httplib bounds only a body whose Content-Length
  // gives its size, and inflates whatever a compressed one inflates to.
  bool read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read);
  static std::string echo_request_id(const httplib::Request& req, httplib::Response& res);
  std::string answer_id(const httplib::Request& req, httplib::Response& res, const char* prefix,
                        std::string named = "");
};

// The key as OpenAI's clients send it (Authorization: Bearer, the scheme in
// any case) or as Anthropic-style ones do (X-Api-Key).
bool HttpServer::Impl::authorized(const httplib::Request& req) const {
  if (options.api_key.empty()) return true;
  const std::string auth = req.get_header_value("Authorization");
  constexpr size_t kScheme = 7;  // "Bearer "
  const std::string key = auth.size() > kScheme && ::strncasecmp(auth.c_str(), "bearer ", kScheme) == 0
                              ? auth.substr(kScheme)
                              : req.get_header_value("X-Api-Key");
  return equal_in_constant_time(key, options.api_key);
}

// What Access-Control-Allow-Origin says to this request ("" when nothing).
std::string HttpServer::Impl::allowed_origin(const httplib::Request& req) const {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return "";
  const auto& allowed = options.allowed_origins;
  if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end()) return "*";
  return std::find(allowed.begin(), allowed.end(), origin) != allowed.end() ? origin : "";
}

void HttpServer::Impl::post(const std::string& path, httplib::Server::Handler handler) {
  http.Post(path, [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                       const httplib::ContentReader& read) {
    if (read_body(req, res, read)) handler(req, res);
  });
}

bool HttpServer::Impl::read_body(const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& read) {
  std::string& body = const_cast<httplib::Request&>(req).body;  // httplib's own request
  bool too_large = false;
  const bool whole = read([&](const char* data, size_t size) {
    too_large = body.size() + size > options.max_body_bytes;
    if (!too_large) body.append(data, size);
    return !too_large;
  });
  if (whole) return true;
  if (too_large || res.status == 413)
    send_error(res, ApiError(413, "the request body is larger than the server's limit of " +
                                      std::to_string(options.max_body_bytes) +
                                      " bytes (--max-body), as sent or as it inflates"));
  else if (res.status == 415)
    send_error(res, ApiError(415, "this build cannot inflate Content-Encoding '" +
                                      input_excerpt(req.get_header_value("Content-Encoding")) + "'"));
  else
    send_error(res, ApiError(400,
                             "the request body could not be read: shorter than its Content-Length, a malformed "
                             "chunk (trailers are not taken), or compressed data that does not inflate"));
  close_after_sending(res);  // the rest of it is unread
  return false;
}

// vLLM's X-Request-Id: the header's name for the request, echoed in the
// answer's headers ("" without one); 400 for one unfit for logs and headers.
std::string HttpServer::Impl::echo_request_id(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_header("X-Request-Id")) return "";
  std::string named = req.get_header_value("X-Request-Id");
  if (!is_request_id(named))
    throw ApiError(400, "the X-Request-Id header must be 1 to 256 printable ASCII characters, no spaces");
  res.set_header("X-Request-Id", named);
  return named;
}

// An answer's id: `prefix` and the X-Request-Id header's name, else `named`
// (a body's request_id), else a random one (as vLLM's: unique across
// restarts and replicas, saying nothing of how many requests came before).
std::string HttpServer::Impl::answer_id(const httplib::Request& req, httplib::Response& res, const char* prefix,
                                        std::string named) {
  if (std::string header = echo_request_id(req, res); !header.empty()) named = std::move(header);
  if (!named.empty()) return prefix + named;
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> lock(id_mutex);
    a = id_random();
    b = id_random();
  }
  char id[64];
  std::snprintf(id, sizeof id, "%s%016llx%016llx", prefix, static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return id;
}

// Sets `provider` as the body as it is made: chunked, or for an HTTP/1.0
// client (nginx's default proxy_http_version), which has no chunked transfer
// coding (RFC 7230 3.3.1), up to the connection's end. One that asked to keep
// the connection alive (ab -k) is told it closes: httplib 0.11 would keep it
// open, and that client waiting for the end, so the provider fails once the
// body is done, which makes httplib close it. (Made whole first instead, the
// answer wrote nothing while it was computed: a client that left was never
// noticed, and its request ran to the end of the context.)
void HttpServer::Impl::provide_as_made(const httplib::Request& req, httplib::Response& res, const char* type,
                                       const httplib::ContentProviderWithoutLength& provider) {
  if (req.version != "HTTP/1.0") return res.set_chunked_content_provider(type, provider);
  if (req.get_header_value("Connection") != "Keep-Alive") return res.set_content_provider(type, provider);
  res.set_header("Connection", "close");
  res.set_content_provider(type, [provider](size_t offset, httplib::DataSink& sink) {
    bool ended = false;
    httplib::DataSink ending;
    ending.write = sink.write;
    ending.is_writable = sink.is_writable;
    ending.done = [&] {
      ended = true;
      sink.done();
    };
    return provider(offset, ending) && !ended;
  });
}

// The answer of prompt-only requests (an embedding or a score per input),
// batched on the engine loop with whatever else runs: with its status when
// done within status_wait; else it begins (200) and a space goes out every
// space_interval until it is done, a write being how a client that left is
// noticed (its requests are then cancelled), and a failure after that is the
// error object as the body.
void HttpServer::Impl::answer_prompt_only(const httplib::Request& req, httplib::Response& res,
                                          const std::vector<std::vector<int32_t>>& inputs, const char* field,
                                          int32_t adapter, const PromptOnlyBatch::Submit& submit,
                                          std::function<ordered_json(const Outputs&)> answer) {
  using Clock = std::chrono::steady_clock;
  // An input too long for the context is known now: a 400 before anything runs (vLLM checks it as it parses), not
  // an error body after the inputs before it were computed and the answer (200) began.
  for (size_t k = 0; k < inputs.size(); ++k)
    if (static_cast<int64_t>(inputs[k].size()) > loop->context())
      throw ApiError(400,
                     std::string(field) + " " + std::to_string(k) + ": the prompt has " +
                         std::to_string(inputs[k].size()) + " tokens but the context length is " +
                         std::to_string(loop->context()) + " tokens",
                     field);
  std::optional<engine::EngineLoop::Reservation> reservation =
      loop->reserve(static_cast<int64_t>(inputs.size()), adapter);
  if (!reservation) throw ApiError(503, kBusy);
  auto batch = std::make_shared<PromptOnlyBatch>(inputs, field, std::move(*reservation), submit);
  // The request in /metrics once it ends: "stop", "error", or "abort" when
  // dropped unfinished (its client left).
  struct Record {
    Record(Metrics& m, int64_t t) : metrics(m), tokens(t) {}
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
    Metrics& metrics;
    int64_t tokens;
    Clock::time_point start = Clock::now();
    const char* reason = "abort";
    ~Record() {
      metrics.record_request(tokens, 0, -1, std::chrono::duration<double>(Clock::now() - start).count(), reason);
    }
  };
  auto record = std::make_shared<Record>(*metrics, batch->prompt_tokens());
  // Done within the status wait: a whole answer, with its status, recorded as it ended.
  try {
    if (batch->wait(Clock::now() + options.status_wait, options.space_interval, [] { return true; })) {
      record->reason = "stop";
      send_json(res, answer(batch->outputs()));
      return;
    }
  } catch (const Error&) {
    record->reason = "error";
    throw;
  }
  const auto provider = [batch, answer, record, slice = options.space_interval](size_t, httplib::DataSink& sink) {
    ordered_json body;
    try {
      if (!batch->wait(Clock::time_point::max(), slice, [&] { return sink.is_writable() && sink.write(" ", 1); }))
        return false;  // the client left
      body = answer(batch->outputs());
      record->reason = "stop";
    } catch (const ApiError& e) {
      body = e.to_json();
      record->reason = "error";
    } catch (const Error& e) {
      body = ApiError(500, e.what()).to_json();
      record->reason = "error";
    }
    const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    sink.write(text.data(), text.size());
    sink.done();
    return true;
  };
  // The charset keeps httplib from compressing it (it compresses "application/json" exactly): a
  // compressor would hold the spaces back.
  provide_as_made(req, res, "application/json; charset=utf-8", provider);
}

// 400 for a request's priority other than 0 where the policy is first come, first served.
void HttpServer::Impl::check_priority(int32_t priority) const {
  if (priority != 0 && !options.priority_scheduling)
    throw ApiError(400,
                   "'priority' is " + std::to_string(priority) +
                       " but priority scheduling is off: the server runs requests first come, first served "
                       "(start it with --scheduling-policy priority)",
                   "priority");
}

PromptOnlyBatch::Submit HttpServer::Impl::embed(const PromptOnlyOptions& run) const {
  check_priority(run.priority);
  return [this, run](const std::vector<int32_t>& ids, engine::EngineLoop::Reservation* reservation) {
    return loop->submit_embedding(ids, reservation, run);
  };
}

void HttpServer::Impl::embeddings(const httplib::Request& req, httplib::Response& res) {
  auto request = std::make_shared<const EmbeddingRequest>(
      parse_embedding_request(parse_json_body(req.body), *model, loop->capacity()));
  echo_request_id(req, res);  // OpenAI's embeddings answer has no id to name
  answer_prompt_only(req, res, request->inputs, "input", request->run.adapter, embed(request->run),
                     [request, name = served_name(*model, request->run.adapter)](const Outputs& outputs) {
                       return embedding_response(*request, outputs, name);
                     });
}

// A reranker's prompts: its head's embedding requests, or scoring requests
// for the logits of "no" and "yes".
PromptOnlyBatch::Submit HttpServer::Impl::rerank_scoring(std::shared_ptr<const RerankPrompt> prompt,
                                                         const PromptOnlyOptions& run) const {
  if (prompt->uses_classifier()) return embed(run);
  check_priority(run.priority);
  return [this, prompt, run](const std::vector<int32_t>& ids, engine::EngineLoop::Reservation* reservation) {
    return loop->submit_scoring(ids, prompt->score_ids(), reservation, run);
  };
}

void HttpServer::Impl::rerank(const httplib::Request& req, httplib::Response& res) {
  auto request =
      std::make_shared<const RerankRequest>(parse_rerank_request(parse_json_body(req.body), *model, loop->capacity()));
  const std::string id = answer_id(req, res, "rerank-");  // before anything is submitted
  answer_prompt_only(req, res, request->inputs, "documents", request->run.adapter,
                     rerank_scoring(request->prompt, request->run),
                     [request, id, name = served_name(*model, request->run.adapter)](const Outputs& outputs) {
                       return rerank_response(*request, outputs, id, name);
                     });
}

void HttpServer::Impl::classify(const httplib::Request& req, httplib::Response& res) {
  auto request = std::make_shared<const ClassifyRequest>(
      parse_classify_request(parse_json_body(req.body), *model, loop->capacity()));
  const std::string id = answer_id(req, res, "classify-");
  answer_prompt_only(req, res, request->inputs, "input", request->run.adapter, embed(request->run),
                     [request, &qwen = *model->bundle.model, id, name = served_name(*model, request->run.adapter)](
                         const Outputs& outputs) { return classify_response(*request, outputs, qwen, id, name); });
}

// The adapter a LoRA update names, once updates are allowed.
std::string HttpServer::Impl::lora_name(const ordered_json& body) const {
  if (!options.runtime_lora_updating)
    throw ApiError(404, "runtime LoRA updating is off: start the server with --allow-runtime-lora-updating");
  if (!given(body, "lora_name") || !body["lora_name"].is_string() ||
      body["lora_name"].get_ref<const std::string&>().empty())
    bad("lora_name", "'lora_name' must be a non-empty string");
  return body["lora_name"].get<std::string>();
}

// vLLM's answers: the adapter is read on this thread, then added between two
// engine steps; from then on requests naming it run with it.
void HttpServer::Impl::load_lora_adapter(const httplib::Request& req, httplib::Response& res) {
  const ordered_json body = parse_json_body(req.body);
  const std::string name = lora_name(body);
  // vLLM's request: load_inplace replaces an adapter of the name (its running requests finish with the old one).
  check_known_fields(body, {"lora_name", "lora_path", "load_inplace"});
  if (!given(body, "lora_path") || !body["lora_path"].is_string())
    bad("lora_path", "'lora_path' must be the adapter's directory on the server");
  if (given(body, "load_inplace") && !body["load_inplace"].is_boolean())
    bad("load_inplace", "'load_inplace' must be true or false");
  const bool in_place = given(body, "load_inplace") && body["load_inplace"].get<bool>();
  const std::string path = body["lora_path"].get<std::string>();
  Qwen3Model& qwen = *model->bundle.model;
  const auto taken = [&] {
    return ApiError(400, "The lora adapter '" + input_excerpt(name) + "' has already been loaded.", "lora_name");
  };
  if (name == model->name || (!in_place && qwen.find_adapter(name))) throw taken();
  // As vLLM: no adapter there is a 404, one that cannot be read a 400.
  if (std::error_code ec; path.empty() || !std::filesystem::is_directory(path, ec))
    throw ApiError(404, "No adapter found for " + input_excerpt(path) + ": not a directory on the server", "lora_path");
  auto read = std::make_shared<Qwen3Model::ReadAdapter>();
  try {
    *read = qwen.read_adapter(path);
  } catch (const Error& e) {
    bad("lora_path", e.what());
  }
  auto replaced = std::make_shared<std::optional<int32_t>>();
  try {
    loop->between_steps([&qwen, name, read, replaced, in_place] {
          qwen.add_adapter(name, std::move(*read), in_place ? replaced.get() : nullptr);
        })
        .get();
  } catch (const Error&) {
    if (stopping) throw ApiError(503, "the server is shutting down");
    if (!in_place && qwen.find_adapter(name)) throw taken();  // another request added it meanwhile
    throw;
  }
  if (*replaced) loop->between_steps([&qwen, i = **replaced] { qwen.drop_adapter(i); }, **replaced);
  res.set_content("Success: LoRA adapter '" + name + "' added successfully.", "text/plain; charset=utf-8");
}

// Its name is gone at once (a request naming it now gets 404); its updates
// are dropped once the requests already running with it are done.
void HttpServer::Impl::unload_lora_adapter(const httplib::Request& req, httplib::Response& res) {
  const ordered_json body = parse_json_body(req.body);
  const std::string name = lora_name(body);
  check_known_fields(body, {"lora_name", "lora_int_id"});  // vLLM's request has the id too, unused there as here
  Qwen3Model& qwen = *model->bundle.model;
  const std::optional<int32_t> index = qwen.unlist_adapter(name);
  if (!index) throw ApiError(404, "The lora adapter '" + input_excerpt(name) + "' cannot be found.", "lora_name");
  loop->between_steps([&qwen, i = *index] { qwen.drop_adapter(i); }, *index);
  res.set_content("Success: LoRA adapter '" + name + "' removed successfully.", "text/plain; charset=utf-8");
}

void HttpServer::Impl::score(const httplib::Request& req, httplib::Response& res) {
  auto request =
      std::make_shared<const ScoreRequest>(parse_score_request(parse_json_body(req.body), *model, loop->capacity()));
  const std::string id = answer_id(req, res, "score-");
  answer_prompt_only(req, res, request->inputs, "text_2", request->run.adapter,
                     request->prompt ? rerank_scoring(request->prompt, request->run) : embed(request->run),
                     [request, id, name = served_name(*model, request->run.adapter)](const Outputs& outputs) {
                       return score_response(*request, outputs, id, name);
                     });
}

void HttpServer::Impl::completion(const httplib::Request& req, httplib::Response& res, Api api) {
  ordered_json body = parse_json_body(req.body);
  if (options.ignore_unknown_fields) {
    const std::vector<std::string> unknown =
        api == Api::Responses ? unknown_response_fields(body) : unknown_fields(body, api == Api::Chat);
    if (!unknown.empty()) {
      // The first few, as JSON strings: a key may hold a newline or a terminal's escape codes.
      std::string names;
      constexpr size_t kNamed = 8;
      for (size_t i = 0; i < std::min(unknown.size(), kNamed); ++i)
        names += (i ? ", " : "") +
                 ordered_json(input_excerpt(unknown[i])).dump(-1, ' ', true, ordered_json::error_handler_t::replace);
      if (unknown.size() > kNamed) names += " and " + std::to_string(unknown.size() - kNamed) + " more";
      std::fprintf(stderr, "[serve] ignored the request fields %s\n", names.c_str());
      // In one pass: erasing key by key from an ordered object is quadratic.
      const std::set<std::string_view> dropped(unknown.begin(), unknown.end());
      ordered_json::object_t kept;
      for (auto& [key, value] : body.get_ref<ordered_json::object_t&>())
        if (!dropped.count(key)) kept.emplace_back(key, std::move(value));
      body.get_ref<ordered_json::object_t&>() = std::move(kept);
    }
  }
  auto parse = [&]() -> CompletionRequest {
    if (api == Api::Completions) return parse_completion_request(body, *model);
    if (api == Api::Chat) return parse_chat_request(body, *model);
    try {
      const ordered_json chat = chat_body_of_response_request(body);
      return drops_input_to_fit(body) ? parse_chat_request_fitting(chat, *model) : parse_chat_request(chat, *model);
    } catch (const ApiError& e) {
      throw as_response_request_error(e);
    }
  };
  auto request = std::make_shared<CompletionRequest>(parse());
  request->tool_call_offsets = request->answer_logprobs_only = api == Api::Responses;
  check_priority(request->options.priority);
  const std::string id = answer_id(req, res,
                                   api == Api::Chat          ? "chatcmpl-"
                                   : api == Api::Completions ? "cmpl-"
                                                             : "resp_",
                                   request->request_id);
  // The Responses API's answers are the chat answers made Response objects.
  std::shared_ptr<const ResponseContext> response_context;
  if (api == Api::Responses)
    response_context = std::make_shared<const ResponseContext>(
        ResponseContext{id, static_cast<int64_t>(std::time(nullptr)), served_name(*model, request->options.adapter),
                        body, as_written(request->options.sampling.temperature),
                        as_written(request->options.sampling.top_p), request->options.logprobs >= 0});
  // The answer in the API's form; `begun`: its 200 went out (a Responses
  // error then is a failed Response, which the SDK returns, not an error
  // object it would not raise).
  auto in_api = [response_context](ordered_json answer, bool begun) {
    if (!response_context) return answer;
    if (!answer.contains("error")) return response_of_chat_answer(*response_context, answer);
    const ApiError error = response_error_of(answer);
    return begun ? failed_response(*response_context, error) : error.to_json();
  };
  // Counted from before its choices start until the last copy of `log` (held
  // by what writes the answer out) is gone.
  ++answers;
  const std::shared_ptr<void> counted(nullptr, [this](void*) { --answers; });
  auto run = std::make_shared<CompletionRun>(*request, *model, *loop, *metrics, id, options.status_wait);
  auto log = [run, id, counted] {
    const auto& s = run->summary();
    const double decode_s = s.total_s - (s.ttft_s > 0 ? s.ttft_s : 0);
    std::fprintf(stderr, "[serve] %s prompt %lld (cached %lld) completion %lld ttft %.3f s %.1f tok/s %s\n", id.c_str(),
                 static_cast<long long>(s.prompt_tokens), static_cast<long long>(s.cached_tokens),
                 static_cast<long long>(s.completion_tokens), s.ttft_s,
                 decode_s > 0 && s.completion_tokens > 1 ? (s.completion_tokens - 1) / decode_s : 0.0,
                 s.finish_reason.c_str());
  };
  // A whole answer, with its length; `log` (so the count) is held until
  // httplib is done writing it. An error's (small) goes as content: httplib
  // gives a body-less error status to the error handler.
  auto send_whole = [&](std::string text, const char* type) {
    if (res.status >= 400) return res.set_content(text, type);
    auto whole = std::make_shared<const std::string>(std::move(text));
    res.set_content_provider(
        whole->size(), type,
        [whole](size_t offset, size_t length, httplib::DataSink& sink) {
          return write_part(*whole, offset, length, sink);
        },
        [log](bool) {});
  };
  if (!request->stream) {
    // Done within the status wait: sent whole, with its status.
    if (run->run_until(run->start() + options.status_wait)) {
      const ordered_json answer = in_api(run->run_to_end(options.space_interval, [] { return true; }), false);
      log();
      res.status = run->status();
      send_whole(answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                 "application/json; charset=utf-8");
      return;
    }
    // Sent as it is made, so that a space (which JSON allows before a value)
    // can go out every space_interval while the answer is computed.
    // The charset keeps httplib from compressing it (it compresses "application/json" exactly): a
    // compressor would hold the spaces back.
    provide_as_made(req, res, "application/json; charset=utf-8",
                    [interval = options.space_interval, run, request, log, in_api](size_t, httplib::DataSink& sink) {
                      const ordered_json answer = in_api(
                          run->run_to_end(interval, [&] { return sink.is_writable() && sink.write(" ", 1); }), true);
                      const std::string text = answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
                      sink.write(text.data(), text.size());
                      log();
                      sink.done();
                      return true;
                    });
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass events through as they come
  provide_as_made(req, res, "text/event-stream",
                  [run, request, log, response_context](size_t, httplib::DataSink& sink) {
                    auto write = [&](const std::string& text) {
                      return sink.is_writable() && sink.write(text.data(), text.size());
                    };
                    if (response_context) {
                      ResponseEvents events(*response_context);
                      run->stream(write, [&events](const ordered_json& chunk) { return events.on(chunk); });
                    } else {
                      run->stream(write);
                    }
                    log();
                    sink.done();
                    return true;
                  });
}

void HttpServer::Impl::routes() {
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready || stopping) {
      res.status = 503;
      send_json(res, {{"status", stopping ? "stopping" : "loading"}});
      if (stopping) close_after_sending(res);  // a kept-alive prober would hold the exit
      return;
    }
    send_json(res, {{"status", "ok"}});
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics->render(loop->stats(), model->bundle.model->adapter_names()), "text/plain; version=0.0.4");
  });
  // The base model, then each named LoRA adapter with the model it adapts
  // as its parent (vLLM's listing). Read after ready, which set_ready() sets last.
  auto model_object = [this](int32_t adapter) {
    ordered_json o = {{"id", served_name(*model, adapter)},
                      {"object", "model"},
                      {"created", ready_at},
                      {"owned_by", "qinfer"},
                      {"max_model_len", model->context}};
    if (adapter >= 0) o["parent"] = model->name;
    return o;
  };
  http.Get("/v1/models", [this, model_object](const httplib::Request&, httplib::Response& res) {
    ordered_json data = ordered_json::array({model_object(-1)});
    const std::vector<Qwen3Model::AdapterName> adapters = model->bundle.model->adapter_names();
    for (size_t a = 0; a < adapters.size(); ++a)
      if (adapters[a].listed) data.push_back(model_object(static_cast<int32_t>(a)));
    send_json(res, {{"object", "list"}, {"data", data}});
  });
  http.Get(R"(/v1/models/(.+))", [this, model_object](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1].str();
    // A served name with a trailing slash: where it is, as the routes redirect (a name may hold slashes itself).
    const auto served = [&](const std::string& n) { return n == model->name || model->bundle.model->find_adapter(n); };
    if (name.size() > 1 && name.back() == '/' && !served(name) && served(name.substr(0, name.size() - 1))) {
      res.status = 308;
      res.set_header("Location", "/v1/models/" + name.substr(0, name.size() - 1));
      return;
    }
    send_json(res, model_object(requested_adapter({{"model", name}}, *model)));
  });
  // CORS preflights (and plain OPTIONS): what each route allows. Browsers send
  // them without credentials, so they pass without the key.
  http.Options(".*", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string allowed = allowed_methods(req.path);
    if (allowed.empty() && req.path.rfind("/v1/models/", 0) != 0)
      throw ApiError(404, "no route OPTIONS " + input_excerpt(req.path));
    res.status = 204;
    res.set_header("Allow", (allowed.empty() ? std::string("GET") : allowed) + ", OPTIONS");
    if (allowed_origin(req).empty() || !req.has_header("Access-Control-Request-Method")) return;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string headers = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", headers.empty() ? "Authorization, Content-Type" : headers);
    res.set_header("Access-Control-Max-Age", "600");
  });
  post("/v1/chat/completions",
       [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, Api::Chat); });
  post("/v1/completions",
       [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, Api::Completions); });
  post("/v1/responses",
       [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, Api::Responses); });
  post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); });
  // vLLM serves all three paths for the same API.
  for (const char* path : {"/rerank", "/v1/rerank", "/v2/rerank"})
    post(path, [this](const httplib::Request& req, httplib::Response& res) { rerank(req, res); });
  for (const char* path : {"/classify", "/v1/classify"})  // vLLM's path, and under /v1 as the others
    post(path, [this](const httplib::Request& req, httplib::Response& res) { classify(req, res); });
  for (const char* path : {"/score", "/v1/score"})
    post(path, [this](const httplib::Request& req, httplib::Response& res) { score(req, res); });
  // vLLM's: a text ('prompt', or llama-server's 'content'), or 'messages' as
  // /v1/chat/completions renders them (generation prompt included).
  post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    const ordered_json body = parse_json_body(req.body);
    check_known_fields(body,
                       {"model", "prompt", "content", "messages", "tools", "chat_template_kwargs", "add_special_tokens",
                        "add_generation_prompt", "continue_final_message", "return_token_strs"});
    requested_adapter(body, *model);  // another model's name is a 404, as on every endpoint
    if (body.contains("return_token_strs") && !body["return_token_strs"].is_boolean())
      throw ApiError(400, "'return_token_strs' must be true or false", "return_token_strs");
    // The post-processor's special tokens (Qwen3-Embedding appends
    // <|endoftext|>; Qwen3's tokenizer adds none): by default for a text, not
    // for messages, as vLLM.
    if (body.contains("add_special_tokens") && !body["add_special_tokens"].is_boolean())
      throw ApiError(400, "'add_special_tokens' must be true or false", "add_special_tokens");
    const bool add_special = body.value("add_special_tokens", !body.contains("messages"));
    const Tokenizer& tokenizer = model->bundle.require_tokenizer();
    std::vector<int32_t> ids;
    if (body.contains("messages")) {
      if (body.contains("prompt") || body.contains("content"))
        throw ApiError(400, "give 'prompt' or 'messages', not both", "messages");
      ordered_json chat = body;  // tokenized as /v1/chat/completions renders it
      chat.erase("add_special_tokens");
      chat.erase("return_token_strs");
      // Whether a conversation fits is what a client asks /tokenize (vLLM checks no length there).
      const ServedModel any_length{model->bundle, model->name, std::numeric_limits<int64_t>::max()};
      ids = parse_chat_request(chat, any_length).prompts.at(0);
    } else {
      const std::string key = body.contains("content") && !body.contains("prompt") ? "content" : "prompt";
      if (!body.contains(key) || !body[key].is_string())
        throw ApiError(400, "'" + key + "' must be a string (the text to tokenize; or 'messages')", key);
      ids = tokenizer.encode(body[key].get<std::string>());
    }
    if (add_special) ids = tokenizer.with_special_tokens(std::move(ids));
    ordered_json answer = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", model->context}};
    if (body.value("return_token_strs", false)) {  // vLLM's: each id's token string (byte-level, as HF's)
      ordered_json strs = ordered_json::array();
      for (int32_t id : ids) strs.push_back(tokenizer.id_to_piece(id));
      answer["token_strs"] = std::move(strs);
    }
    send_json(res, answer);
  });
  post("/v1/load_lora_adapter",
       [this](const httplib::Request& req, httplib::Response& res) { load_lora_adapter(req, res); });
  post("/v1/unload_lora_adapter",
       [this](const httplib::Request& req, httplib::Response& res) { unload_lora_adapter(req, res); });
  post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    const ordered_json body = parse_json_body(req.body);
    check_known_fields(body, {"model", "tokens"});
    requested_adapter(body, *model);
    if (!body.contains("tokens") || !body["tokens"].is_array())
      throw ApiError(400, "'tokens' must be a list of token ids", "tokens");
    std::vector<int32_t> ids;
    const int64_t vocab = model->bundle.model->config().vocab_size;
    for (const auto& t : body["tokens"]) {
      if (!is_token_id(t, static_cast<uint64_t>(vocab)))
        throw ApiError(400, "'tokens' must be token ids in [0, " + std::to_string(vocab) + ")", "tokens");
      ids.push_back(t.get<int32_t>());
    }
    send_json(res, {{"prompt", model->bundle.require_tokenizer().decode(ids)}});
  });

  // Where the pre-routing handler sends a request it refuses that has a body:
  // the body is read, then the refusal answered.
  const auto refused = [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
    if (!read_body(req, res, read)) return;
    if (!t_refusal) throw ApiError(404, "no route " + input_excerpt(req.method) + " " + input_excerpt(req.path));
    const Refusal r = std::move(*t_refusal);
    t_refusal.reset();
    send_refusal(res, r);
  };
  http.Post(kRefusedPath, refused);
  http.Put(kRefusedPath, refused);
  http.Patch(kRefusedPath, refused);
  http.Delete(kRefusedPath, refused);

  // Authentication and readiness before routing: /health and /metrics stay
  // open (probes and Prometheus scrapers carry no key), as in vLLM.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // No answer here is served in parts: a Range header is ignored (RFC 9110 allows it), the whole answer sent.
    // httplib would cut the answer at the header's bounds unchecked, past its end (heap bytes to the client).
    // The request is httplib's own, not const (const_cast is sound).
    httplib::Request& request = const_cast<httplib::Request&>(req);
    request.ranges.clear();
    t_refusal.reset();
    // A refusal of a request with a body: answered once kRefusedPath's route has read the body.
    auto refuse = [&](Refusal r) {
      const bool routable = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                            req.method == "DELETE";  // kRefusedPath's methods
      if (!carries_body(req) || !routable) {
        r.close = r.close || carries_body(req);  // a body no route reads ends the connection
        send_refusal(res, r);
        return httplib::Server::HandlerResponse::Handled;
      }
      t_refusal = std::move(r);
      request.path = kRefusedPath;
      return httplib::Server::HandlerResponse::Unhandled;
    };
    // A method the path has no route for (answered at once when nothing is to be read: a POST
    // without a length included); and a chunked or compressed body to a path without a POST
    // route (only those bound what they read).
    const std::optional<ApiError> problem = framing_problem(req);
    const std::string methods = allowed_methods(req.path);
    const std::string method = req.method == "HEAD" ? "GET" : req.method;  // httplib answers HEAD with GET's route
    const bool routed = std::any_of(std::begin(kRoutes), std::end(kRoutes),
                                    [&](const Route& r) { return req.path == r.path && method == r.method; });
    if (!methods.empty() && !routed && req.method != "OPTIONS" && !(problem && carries_body(req)))
      return refuse({ApiError(405, "method " + input_excerpt(req.method) + " is not allowed on " +
                                       input_excerpt(req.path) + "; use " + methods),
                     methods + ", OPTIONS"});
    if (problem) {
      send_error(res, *problem);
      close_after_sending(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if ((req.has_header("Transfer-Encoding") || req.has_header("Content-Encoding")) && !routed)
      return refuse({ApiError(404, "no route " + input_excerpt(req.method) + " " + input_excerpt(req.path))});
    // A page of another site may send a form POST here without asking (no
    // preflight), and a server with no key would run it: only the pages of
    // --allowed-origins are served.
    if (req.has_header("Origin") && req.method != "OPTIONS" && allowed_origin(req).empty())
      return refuse({ApiError(403, "requests from the web pages of " + input_excerpt(req.get_header_value("Origin")) +
                                       " are refused: start the server with --allowed-origins naming it to allow "
                                       "them")});
    // Open, and so their redirects (a hunt finding: "/metrics/" with --api-key was a 401, not the 308).
    if (req.path == "/health" || req.path == "/health/" || req.path == "/metrics/" || req.method == "OPTIONS")
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.path == "/metrics") {
      if (ready) return httplib::Server::HandlerResponse::Unhandled;
      return refuse({ApiError(503, "the model is still loading")});
    }
    if (!authorized(req))
      return refuse(
          {ApiError(401, "a valid API key is required: 'Authorization: Bearer <key>' (or 'X-Api-Key: <key>')")});
    if (!ready) return refuse({ApiError(503, "the model is still loading")});
    // On a connection kept alive; the connection then ends, as it would hold the exit.
    if (stopping) return refuse({ApiError(503, "the server is shutting down"), "", true});
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    name_answer(req, res);
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const Error& e) {
      send_error(res, ApiError(400, e.what()));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
    }
  });
  // Browsers let a page read an answer only with this header (CORS).
  http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    name_answer(req, res);
    // Where the answer depends on the origin (a list of them), every answer
    // says so: a cache must not hand one origin's (or no origin's) to another.
    const auto& allowed = options.allowed_origins;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), "*") == allowed.end())
      res.set_header("Vary", "Origin");
    const std::string origin = allowed_origin(req);
    if (!origin.empty()) res.set_header("Access-Control-Allow-Origin", origin);
    // An answer that closes its connection says so once, and offers no keep-alive: httplib adds its
    // Keep-Alive header (and a second Connection) by its own flag, and ab -k, reading Keep-Alive, then waits
    // on the closing connection for the end of a body framed by that close.
    if (res.get_header_value("Connection") == "close") {
      res.headers.erase("Connection");
      res.headers.erase("Keep-Alive");
      res.set_header("Connection", "close");
    }
  });
  // Statuses httplib sets itself (no route, body too large): OpenAI's shape too.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        if (const std::string bare = req.path.substr(0, req.path.size() - 1);
            res.status == 404 && req.path.size() > 1 && req.path.back() == '/' && !allowed_methods(bare).empty()) {
          // A route with a trailing slash: where it is, as FastAPI (vLLM) redirects (308 keeps the method and body).
          const std::string query = req.target.substr(std::min(req.target.find('?'), req.target.size()));
          res.status = 308;
          res.set_header("Location", bare + query);
          res.set_content("the route is " + bare + "\n", "text/plain");
        } else if (res.status == 404) {
          send_error(res, ApiError(404, "no route " + input_excerpt(req.method) + " " + input_excerpt(req.path)));
        } else if (res.status == 413) {  // a body to a path without a route
          send_error(res, ApiError(413, "the request body is larger than the server's limit of " +
                                            std::to_string(options.max_body_bytes) + " bytes (--max-body)"));
        } else if (res.status == 414) {
          send_error(res, ApiError(414, "the request's target is longer than 8192 bytes, the HTTP library's limit"));
          close_after_sending(res);
        } else {
          send_error(res, ApiError(res.status, "the request could not be read (HTTP " + std::to_string(res.status) +
                                                   "): a malformed request line or header, a header line over 8192 "
                                                   "bytes, an unknown HTTP version, or a body shorter than its "
                                                   "Content-Length"));
          close_after_sending(res);
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
}

HttpServer::HttpServer(const ServerOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->http.new_task_queue = [this] { return impl_->threads.release(); };
  impl_->http.set_payload_max_length(options.max_body_bytes);
  impl_->http.set_write_timeout(30, 0);  // a stalled reader gives up its thread, and its request, after 30 s
  // An idle keep-alive connection holds its thread this long, and so delays shutdown at most this long.
  impl_->http.set_keep_alive_timeout(5);
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT lets a second server bind the same port silently.
  impl_->http.set_socket_options([this](int fd) {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    impl_->listen_fd = fd;
  });
  impl_->routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() {
  Impl& s = *impl_;
  if (s.options.port == 0) {
    s.port = s.http.bind_to_any_port(s.options.host);
    if (s.port < 0) fail("cannot listen on ", s.options.host, " (not an address of this host, or no free port)");
  } else if (s.options.port < 0 || s.options.port > 65535) {
    fail("--port must be between 0 and 65535, got ", s.options.port);
  } else {
    if (!s.http.bind_to_port(s.options.host, s.options.port))
      fail("cannot listen on ", s.options.host, ":", s.options.port,
           " (address in use, or not an address of this host)");
    s.port = s.options.port;
  }
  if (s.listen_fd >= 0) ::listen(s.listen_fd, kListenBacklog);
  s.threads = std::make_unique<ConnectionThreads>(static_cast<size_t>(std::max(s.options.http_threads, 4)));
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::serve() { impl_->http.listen_after_bind(); }

// Closes the listening socket, so httplib's accept loop ends and serve()
// returns once every connection is done. Not httplib's stop(): its chunked
// writer checks the listening socket too and would cut short the answers the
// engine is still draining (an empty 200 to every request not yet started).
void HttpServer::stop() {
  impl_->stopping = true;
  if (impl_->listen_fd >= 0) ::shutdown(impl_->listen_fd, SHUT_RDWR);
}

int HttpServer::answers_being_written() const { return impl_->answers.load(); }

void HttpServer::set_ready(const ServedModel& model, engine::EngineLoop& loop) {
  impl_->model = &model;
  impl_->loop = &loop;
  impl_->ready_at = static_cast<int64_t>(std::time(nullptr));
  impl_->metrics = std::make_unique<Metrics>(model.name);
  impl_->ready = true;
}

}  // namespace qinfer::server
