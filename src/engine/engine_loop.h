// The batching engine on a thread of its own, fed from many threads (the
// server's HTTP handlers, as llama.cpp's server keeps its slots on one loop):
// submit() queues a prompt and returns the request's stream, on which the
// caller waits for its tokens. The engine thread never waits on a consumer:
// tokens go into each stream's queue, and a cancelled or abandoned stream
// leaves the batch at the next step, freeing its blocks.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace qinfer::engine {

// One request as its consumer sees it. Thread-safe.
class RequestStream {
 public:
  enum class State { Running, Finished, Failed };
  // Whose the failure is: Refused, the request's as given (a client's error:
  // a prompt too long, a grammar that cannot go on); ShutDown, the server
  // stopped before it finished (retry it); Lost, the engine failed it.
  enum class Failure { Refused, ShutDown, Lost };

  // Appends the tokens generated since the last call to `tokens` (and, when
  // the request asked for them, their log-probabilities to `logprobs`),
  // waiting up to `timeout` when there are none yet; then the request's state.
  State wait(std::vector<int32_t>& tokens, std::chrono::milliseconds timeout,
             std::vector<TokenLogprobs>* logprobs = nullptr);
  // Once Finished: the engine's result (all ids, reason, prompt/cached counts).
  GenerationResult result() const;
  // Once the first token came (or it finished): the prompt's log-probabilities,
  // when the request asked for them (GenerationOptions::prompt_logprobs).
  std::vector<TokenLogprobs> prompt_logprobs() const;
  // Once Finished, for an embedding or scoring request: Engine::output().
  std::vector<float> output() const;
  // Once Failed: why, and whose failure it is.
  std::string error() const;
  Failure failure() const;
  // Stops generation at the next step (a stop string seen, a client gone).
  void cancel();
  bool cancelled() const;
  // When the engine gave the first token (none yet: empty), and the seconds
  // between each later step that gave tokens and the one before it, each
  // given once: the latencies as generated, not as a consumer that polls now
  // and then sees them (it would see several tokens at once). One per step,
  // as vLLM records them: the tokens of a confirmed draft come together.
  std::optional<std::chrono::steady_clock::time_point> first_token_time() const;
  std::vector<double> take_token_gaps();

 private:
  friend class EngineLoop;
  void push(int32_t id, const TokenLogprobs* logprobs, uint64_t step);
  void set_prompt_logprobs(std::span<const TokenLogprobs> logprobs);
  void finish(const GenerationResult& result, std::span<const float> output = {});
  void fail(std::string message, Failure failure);
  // A cancel by the loop's drain: the request ends as Failed (ShutDown), not
  // as a finished answer.
  void cut();
  bool was_cut() const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> pending_;
  std::vector<TokenLogprobs> pending_logprobs_;
  std::vector<TokenLogprobs> prompt_logprobs_;
  std::optional<std::chrono::steady_clock::time_point> first_token_;
  std::chrono::steady_clock::time_point last_token_;  // when the latest step's tokens came
  uint64_t last_step_ = 0;
  std::vector<double> token_gaps_;
  State state_ = State::Running;
  GenerationResult result_;
  std::vector<float> output_;
  std::string error_;
  Failure failure_ = Failure::Lost;
  bool cancelled_ = false, cut_ = false;
};

struct EngineLoopOptions {
  EngineOptions engine;
  int64_t max_waiting = 256;  // requests queued beyond the engine's max_running; submit() refuses more
};

class EngineLoop {
 public:
  EngineLoop(const Qwen3Model& model, ThreadPool& pool, const EngineLoopOptions& options);
  ~EngineLoop();  // cancels what is in flight and joins the thread
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Room in the queue held for the requests of one client's request (its
  // prompts x n, an embeddings request's inputs), so that it is admitted or
  // refused whole, as vLLM admits one request: the further choices of an
  // n > 1 request, submitted once the first has started, find their room,
  // also while the loop drains. Each submit through it takes one place;
  // what is left when it goes gives its places back. While it has places
  // left, the named LoRA adapter its requests run with (-1: none) stays
  // loaded, as for the requests submitted: an unload waits for them all.
  class Reservation {
   public:
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&&) = delete;
    ~Reservation();

   private:
    friend class EngineLoop;
    Reservation(EngineLoop* loop, int64_t places, int32_t adapter) : loop_(loop), left_(places), adapter_(adapter) {}
    void release(int64_t places);  // under loop_->mu_
    EngineLoop* loop_;
    int64_t left_;
    int32_t adapter_;
  };
  // Room for `places` requests; empty when the queue has not that much (or
  // the loop stopped or drains).
  std::optional<Reservation> reserve(int64_t places, int32_t adapter = -1);

  // Queues a request; nullptr when the queue is full (or the loop stopped,
  // or drains), or `reservation`, if given, has no place left. A prompt the
  // engine refuses (too long, ids out of range) comes back as a stream in
  // state Failed.
  std::shared_ptr<RequestStream> submit(std::vector<int32_t> prompt, const GenerationOptions& options,
                                        Reservation* reservation = nullptr);
  // The same for an embedding request (Engine::add_embedding): its stream
  // sees no tokens and, Finished, gives output().
  std::shared_ptr<RequestStream> submit_embedding(std::vector<int32_t> prompt, Reservation* reservation = nullptr,
                                                  const PromptOnlyOptions& options = {});
  // The same for a scoring request (Engine::add_scoring).
  std::shared_ptr<RequestStream> submit_scoring(std::vector<int32_t> prompt, std::vector<int32_t> token_ids,
                                                Reservation* reservation = nullptr,
                                                const PromptOnlyOptions& options = {});

  // A snapshot taken after the latest step.
  struct Stats {
    int64_t running = 0, waiting = 0;              // waiting: queued, and places reserved for requests yet to come
    int32_t kv_blocks_used = 0, kv_blocks = 0;     // used = held by live sequences
    int64_t prefix_queries = 0, prefix_hits = 0;   // tokens looked up / found cached
    int64_t preemptions = 0;                       // sequences sent back to wait for KV blocks
    int64_t draft_tokens = 0, draft_accepted = 0;  // speculative decoding: draft ids run, and confirmed
    // The named LoRA adapters (their indexes, ascending) of the running
    // requests, and of the waiting ones.
    std::vector<int32_t> running_adapters, waiting_adapters;
  };
  Stats stats() const;
  int64_t context() const { return engine_.context(); }
  // Requests it holds at once, running and waiting: submit() refuses more.
  int64_t capacity() const { return max_running_ + max_waiting_; }

  // Runs `task` on the engine thread between two steps, where nothing else
  // touches the model (how a served model's adapters come and go), once no
  // request the loop holds uses the named adapter `unused` (-1: at the next
  // step boundary). The future is ready when it ran, or holds what it threw;
  // an Error when the loop stops first.
  std::future<void> between_steps(std::function<void()> task, int32_t unused = -1);

  // Refuses new requests, lets the running ones (and those reserved places
  // still bring) finish until `deadline`, cancels what is left, and returns
  // once the engine is idle.
  void drain(std::chrono::steady_clock::time_point deadline);

 private:
  struct Incoming {
    std::vector<int32_t> prompt;
    GenerationOptions options;  // an embedding or scoring request's: PromptOnlyOptions' fields alone
    std::shared_ptr<RequestStream> stream;
    bool embed = false;
    std::vector<int32_t> score_ids;  // a scoring request's
  };
  std::shared_ptr<RequestStream> queue(Incoming in, Reservation* reservation);
  struct Live {
    int64_t handle;
    std::shared_ptr<RequestStream> stream;
  };
  void run();
  void run_due_tasks();
  void admit(std::deque<Incoming>& incoming);
  void cancel_abandoned();
  void retire_finished();
  void fail_all(const std::string& message);
  void publish_stats();
  void ended(int64_t requests);  // requests that left: room in the queue

  Engine engine_;
  const int64_t max_running_, max_waiting_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the engine thread: work arrived, or stop
  std::condition_variable idle_;  // drain(): the engine went idle
  std::deque<Incoming> incoming_;
  struct Task {
    std::function<void()> run;
    int32_t unused;
    std::promise<void> done;
  };
  std::vector<Task> tasks_;
  // Submitted and not yet finished, and places reserved for requests yet to
  // be submitted: what the queue limit counts.
  int64_t unfinished_ = 0, reserved_ = 0;
  uint64_t steps_ = 0;                      // engine thread only: the steps run, which name the tokens' step
  std::vector<int32_t> reserved_adapters_;  // of the reservations with places left, one entry each (-1 not kept)
  bool accepting_ = true, cancel_all_ = false, stopping_ = false, busy_ = false;
  Stats stats_;
  std::vector<Live> live_;  // engine thread only
  std::thread thread_;
};

}  // namespace qinfer::engine
