// One OpenAI completion request carried out on the engine loop: its choices
// submitted as engine requests, their tokens turned into text (detokenizer,
// stop strings, and for chat the reasoning / tool-call split), answered as
// one JSON body or as Server-Sent Events. Runs on the HTTP thread that took
// the request; only token ids cross to the engine thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_loop.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/metrics.h"
#include "server/openai_request.h"

namespace qinfer::server {

class CompletionRun {
 public:
  // Submits every choice and waits for each to start (its first token, or
  // the engine's refusal) for at most `status_wait`: ApiError 503 when the
  // queue is full or the server shuts down, 400 when the engine refuses the
  // request, 500 when it fails running it. A failure after that (the answer
  // began) ends the answer with OpenAI's error object: the JSON body (with
  // that status while none was sent), or an SSE event.
  CompletionRun(const CompletionRequest& request, const ServedModel& model, engine::EngineLoop& loop, Metrics& metrics,
                std::string id, std::chrono::milliseconds status_wait);
  ~CompletionRun();  // cancels what is still running

  // Runs the choices until all are done (true) or `deadline` passes (false):
  // a JSON answer that is done within the status wait is sent whole, with
  // its status (500 when the engine failed it), not as a 200 begun early.
  bool run_until(std::chrono::steady_clock::time_point deadline);
  // The whole answer (stream = false). Every `interval` until then it asks
  // `client_waiting`; when that says no, every choice is cancelled.
  nlohmann::ordered_json run_to_end(std::chrono::milliseconds interval, const std::function<bool()>& client_waiting);
  // The status of run_to_end's answer: 200, or its error's.
  int status() const { return failure_ ? failure_->status : 200; }
  // SSE events ("data: {...}\n\n", then "data: [DONE]\n\n") through `write`;
  // when write fails (the client left), every choice is cancelled. With
  // `frame`, each chunk (or error object) goes out as the text it makes
  // (another API's events; "" writes nothing), and no [DONE].
  using EventFrame = std::function<std::string(const nlohmann::ordered_json&)>;
  void stream(const std::function<bool(const std::string&)>& write, const EventFrame& frame = nullptr);

  // For the request log: totals once finished.
  struct Summary {
    int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0, reasoning_tokens = 0;
    int64_t accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
    double ttft_s = -1, total_s = 0;
    std::string finish_reason;
  };
  const Summary& summary() const { return summary_; }
  std::chrono::steady_clock::time_point start() const { return start_; }

 private:
  struct Choice;
  // Takes at most `max_tokens` of what the choice's stream has (waiting up
  // to `timeout` when it has none); returns the delta to send, and marks the
  // choice done when it finished and every token is taken.
  ChatDelta poll(Choice& c, std::chrono::milliseconds timeout, size_t max_tokens);
  enum class Part;
  struct Split;                               // where one token's text went in the reply's split
  void note_arrivals(Choice& c);              // time to first token, inter-token times
  void echo_prompt(Choice& c, ChatDelta& d);  // echo: the prompt's text (and logprobs) before the reply's
  Split split(Choice& c, ChatDelta& d) const;
  void settle(Choice& c, const ChatDelta& d, const Split& s) const;
  void take_tokens(Choice& c, size_t n, ChatDelta& d);
  void end_choice(Choice& c, engine::RequestStream::State state, ChatDelta& d);
  static constexpr size_t kAllTokens = SIZE_MAX;
  nlohmann::ordered_json chunk(const nlohmann::ordered_json& choices) const;
  nlohmann::ordered_json usage() const;
  // A streamed chunk's usage with continuous_usage_stats: the choice's prompt and its tokens so far.
  nlohmann::ordered_json usage_so_far(const Choice& c) const;
  // OpenAI's logprobs object for these tokens; text_offset (completions) advances past them.
  // content_at (answer logprobs only): where each token's text is in the content.
  nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprobs>& lps, int64_t& text_offset,
                                       const std::vector<int64_t>& content_at = {}) const;
  // vLLM's prompt_logprobs list of a choice's prompt: null for its first token, then for each
  // {"<id>": {logprob, rank, decoded_token}}, the prompt's token first, then the most likely.
  nlohmann::ordered_json prompt_logprobs_json(const Choice& c) const;
  void finalize();
  // A failed choice as the client's error (400: a grammar that cannot go on),
  // a shutdown's (503: retry) or the engine's (500).
  ApiError failure_of(const engine::RequestStream& s) const;

  const CompletionRequest& request_;
  const ServedModel& model_;
  Metrics& metrics_;
  std::string id_;
  int64_t created_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<Choice>> choices_;
  Summary summary_;
  bool finalized_ = false;
  std::optional<ApiError> failure_;  // why the engine failed a choice after the answer began
};

}  // namespace qinfer::server
