#include "engine/engine_loop.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "util/error.h"

namespace qinfer::engine {

namespace {

// Adds a named adapter (not -1, none) to an ascending list of distinct ones.
void add_adapter(std::vector<int32_t>& adapters, int32_t adapter) {
  const auto at = std::lower_bound(adapters.begin(), adapters.end(), adapter);
  if (adapter >= 0 && (at == adapters.end() || *at != adapter)) adapters.insert(at, adapter);
}

// A queued embedding or scoring request keeps its options as a generation
// request's, so that the adapter accounting reads every request alike.
GenerationOptions generation_options(const PromptOnlyOptions& prompt_only) {
  GenerationOptions options;
  options.adapter = prompt_only.adapter;
  options.cache_salt = prompt_only.cache_salt;
  options.priority = prompt_only.priority;
  return options;
}

}  // namespace

RequestStream::State RequestStream::wait(std::vector<int32_t>& tokens, std::chrono::milliseconds timeout,
                                         std::vector<TokenLogprobs>* logprobs) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.empty() || state_ != State::Running; });
  tokens.insert(tokens.end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (logprobs)
    for (TokenLogprobs& l : pending_logprobs_) logprobs->push_back(std::move(l));
  pending_logprobs_.clear();
  return state_;
}

GenerationResult RequestStream::result() const {
  std::lock_guard lock(mu_);
  return result_;
}

std::vector<TokenLogprobs> RequestStream::prompt_logprobs() const {
  std::lock_guard lock(mu_);
  return prompt_logprobs_;
}

void RequestStream::set_prompt_logprobs(std::span<const TokenLogprobs> logprobs) {
  std::lock_guard lock(mu_);
  prompt_logprobs_.assign(logprobs.begin(), logprobs.end());
}

RequestStream::Failure RequestStream::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void RequestStream::cut() {
  std::lock_guard lock(mu_);
  cut_ = !cancelled_;  // one its consumer ended (a stop string seen) is whole, not cut
  cancelled_ = true;
}

bool RequestStream::was_cut() const {
  std::lock_guard lock(mu_);
  return cut_;
}

std::string RequestStream::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void RequestStream::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
}

bool RequestStream::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

void RequestStream::push(int32_t id, const TokenLogprobs* logprobs, uint64_t step) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    pending_.push_back(id);
    if (logprobs) pending_logprobs_.push_back(*logprobs);
    if (!first_token_ || step != last_step_) {
      if (first_token_)
        token_gaps_.push_back(std::chrono::duration<double>(now - last_token_).count());
      else
        first_token_ = now;
      last_token_ = now;
      last_step_ = step;
    }
  }
  cv_.notify_all();
}

std::optional<std::chrono::steady_clock::time_point> RequestStream::first_token_time() const {
  std::lock_guard lock(mu_);
  return first_token_;
}

std::vector<double> RequestStream::take_token_gaps() {
  std::lock_guard lock(mu_);
  return std::exchange(token_gaps_, {});
}

std::vector<float> RequestStream::output() const {
  std::lock_guard lock(mu_);
  return output_;
}

void RequestStream::finish(const GenerationResult& result, std::span<const float> output) {
  {
    std::lock_guard lock(mu_);
    result_ = result;
    output_.assign(output.begin(), output.end());
    state_ = State::Finished;
  }
  cv_.notify_all();
}

void RequestStream::fail(std::string message, Failure failure) {
  {
    std::lock_guard lock(mu_);
    error_ = std::move(message);
    failure_ = failure;
    state_ = State::Failed;
  }
  cv_.notify_all();
}

EngineLoop::EngineLoop(const Qwen3Model& model, ThreadPool& pool, const EngineLoopOptions& options)
    : engine_(model, pool, options.engine),
      max_running_(options.engine.max_running),
      max_waiting_(options.max_waiting) {
  if (max_waiting_ < 0) fail("the queue length must not be negative");
  stats_.kv_blocks = engine_.blocks().n_blocks();
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    accepting_ = false;
  }
  wake_.notify_all();
  thread_.join();
}

EngineLoop::Reservation::Reservation(Reservation&& other) noexcept
    : loop_(std::exchange(other.loop_, nullptr)), left_(std::exchange(other.left_, 0)), adapter_(other.adapter_) {}

EngineLoop::Reservation::~Reservation() {
  if (loop_ == nullptr || left_ == 0) return;
  std::lock_guard lock(loop_->mu_);
  release(left_);
  loop_->idle_.notify_all();  // a drain waits for reserved places too
}

void EngineLoop::Reservation::release(int64_t places) {
  left_ -= places;
  loop_->reserved_ -= places;
  if (left_ == 0 && adapter_ >= 0) {
    std::vector<int32_t>& pinned = loop_->reserved_adapters_;
    pinned.erase(std::find(pinned.begin(), pinned.end(), adapter_));
    loop_->wake_.notify_all();  // a task may wait for the adapter
  }
}

std::optional<EngineLoop::Reservation> EngineLoop::reserve(int64_t places, int32_t adapter) {
  std::lock_guard lock(mu_);
  if (stopping_ || !accepting_ || places > max_running_ + max_waiting_ - unfinished_ - reserved_) return std::nullopt;
  reserved_ += places;
  if (places > 0 && adapter >= 0) reserved_adapters_.push_back(adapter);
  return Reservation(this, places, adapter);
}

std::shared_ptr<RequestStream> EngineLoop::submit(std::vector<int32_t> prompt, const GenerationOptions& options,
                                                  Reservation* reservation) {
  return queue({std::move(prompt), options, nullptr, false, {}}, reservation);
}

std::shared_ptr<RequestStream> EngineLoop::submit_embedding(std::vector<int32_t> prompt, Reservation* reservation,
                                                            const PromptOnlyOptions& options) {
  return queue({std::move(prompt), generation_options(options), nullptr, true, {}}, reservation);
}

std::shared_ptr<RequestStream> EngineLoop::submit_scoring(std::vector<int32_t> prompt, std::vector<int32_t> token_ids,
                                                          Reservation* reservation, const PromptOnlyOptions& options) {
  return queue({std::move(prompt), generation_options(options), nullptr, false, std::move(token_ids)}, reservation);
}

std::shared_ptr<RequestStream> EngineLoop::queue(Incoming in, Reservation* reservation) {
  auto stream = std::make_shared<RequestStream>();
  in.stream = stream;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return nullptr;
    if (reservation != nullptr) {  // its place was counted when it was reserved
      if (reservation->loop_ != this || reservation->left_ == 0) return nullptr;
      reservation->release(1);
    } else if (!accepting_ || unfinished_ + reserved_ >= max_running_ + max_waiting_) {
      return nullptr;
    }
    ++unfinished_;
    incoming_.push_back(std::move(in));
  }
  wake_.notify_all();
  return stream;
}

EngineLoop::Stats EngineLoop::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  // Places reserved for requests not yet submitted count as waiting: what the queue limit counts adds up.
  s.waiting += static_cast<int64_t>(incoming_.size()) + reserved_;
  for (const Incoming& in : incoming_) add_adapter(s.waiting_adapters, in.options.adapter);
  return s;
}

void EngineLoop::drain(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  accepting_ = false;
  const auto idle = [&] { return !busy_ && incoming_.empty(); };
  // Until the deadline, for the places requests in flight reserved too: an n > 1 request's further choices come
  // once its first has started, and may come after it ended.
  if (!idle_.wait_until(lock, deadline, [&] { return idle() && reserved_ == 0; })) {
    cancel_all_ = true;
    wake_.notify_all();
    idle_.wait(lock, idle);
  }
}

std::future<void> EngineLoop::between_steps(std::function<void()> task, int32_t unused) {
  std::promise<void> done;
  std::future<void> ran = done.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      done.set_exception(std::make_exception_ptr(Error("the server is shutting down")));
      return ran;
    }
    tasks_.push_back({std::move(task), unused, std::move(done)});
  }
  wake_.notify_all();
  return ran;
}

// The tasks whose adapter no request holds: the engine's sequences, those
// not yet taken in, and the places reserved for requests yet to come (an
// n > 1 request's further choices: a hunt finding, they were refused when the
// first ended before they came). A request queued after this look without a
// reservation finds the adapter gone when admitted, and is refused.
void EngineLoop::run_due_tasks() {
  std::vector<int32_t> used;
  for (const Sequence* s : engine_.scheduler().running_seqs()) add_adapter(used, s->adapter);
  for (const Sequence* s : engine_.scheduler().waiting_seqs()) add_adapter(used, s->adapter);
  std::vector<Task> due;
  {
    std::lock_guard lock(mu_);
    for (const Incoming& in : incoming_) add_adapter(used, in.options.adapter);
    for (const int32_t adapter : reserved_adapters_) add_adapter(used, adapter);
    const auto waits = [&](const Task& t) {
      return t.unused >= 0 && std::binary_search(used.begin(), used.end(), t.unused);
    };
    const auto end = std::stable_partition(tasks_.begin(), tasks_.end(), waits);
    std::move(end, tasks_.end(), std::back_inserter(due));
    tasks_.erase(end, tasks_.end());
  }
  for (Task& t : due) try {
      t.run();
      t.done.set_value();
    } catch (...) {
      t.done.set_exception(std::current_exception());
    }
}

void EngineLoop::run() {
  for (;;) {
    std::deque<Incoming> incoming;
    {
      std::unique_lock lock(mu_);
      busy_ = !live_.empty();
      if (!busy_) idle_.notify_all();
      // Idle, a task waits only for a reservation to let its adapter go (else it would spin here).
      const auto task_due = [&](const Task& t) {
        return t.unused < 0 ||
               std::find(reserved_adapters_.begin(), reserved_adapters_.end(), t.unused) == reserved_adapters_.end();
      };
      wake_.wait(lock, [&] {
        return stopping_ || !incoming_.empty() || !live_.empty() || std::any_of(tasks_.begin(), tasks_.end(), task_due);
      });
      if (stopping_) break;
      incoming.swap(incoming_);
      stats_.waiting += static_cast<int64_t>(incoming.size());  // counted until the step's snapshot
      for (const Incoming& in : incoming) add_adapter(stats_.waiting_adapters, in.options.adapter);
      busy_ = true;
      if (cancel_all_) {  // those that just came too: admitted and cancelled before any step
        for (Live& l : live_) l.stream->cut();
        for (Incoming& in : incoming) in.stream->cut();
      }
    }
    admit(incoming);
    cancel_abandoned();
    try {
      ++steps_;
      engine_.step();
    } catch (const std::exception& e) {
      // Nothing a request sends reaches here (add() validated it); if the
      // model itself fails, every request in flight learns why.
      fail_all(std::string("the engine failed: ") + e.what());
    }
    publish_stats();  // before the streams learn they finished, so a consumer then sees their blocks free
    retire_finished();
    run_due_tasks();
  }
  for (Live& l : live_) l.stream->fail("the server is shutting down", RequestStream::Failure::ShutDown);
  std::lock_guard lock(mu_);
  for (Incoming& in : incoming_) in.stream->fail("the server is shutting down", RequestStream::Failure::ShutDown);
  for (Task& t : tasks_) t.done.set_exception(std::make_exception_ptr(Error("the server is shutting down")));
}

void EngineLoop::admit(std::deque<Incoming>& incoming) {
  for (Incoming& in : incoming) {
    RequestStream* stream = in.stream.get();
    try {
      const int64_t handle =
          in.embed ? engine_.add_embedding(in.prompt, prompt_only_options(in.options))
          : !in.score_ids.empty()
              ? engine_.add_scoring(in.prompt, std::move(in.score_ids), prompt_only_options(in.options))
              : engine_.add(
                    in.prompt, in.options,
                    [this, stream](int32_t id, const TokenLogprobs* logprobs) {
                      stream->push(id, logprobs, steps_);
                      return !stream->cancelled();
                    },
                    [stream](std::span<const TokenLogprobs> logprobs) { stream->set_prompt_logprobs(logprobs); });
      live_.push_back({handle, std::move(in.stream)});
    } catch (const Error& e) {
      ended(1);
      stream->fail(e.what(), RequestStream::Failure::Refused);
    }
  }
}

// A stream cancelled while its request waited (or between tokens) leaves now,
// not at its next token.
void EngineLoop::cancel_abandoned() {
  for (const Live& l : live_)
    if (l.stream->cancelled() && !engine_.finished(l.handle)) engine_.cancel(l.handle);
}

// Room in the queue is made before the streams learn they ended, so a
// client that sends its next request at once finds it.
void EngineLoop::retire_finished() {
  const auto end =
      std::stable_partition(live_.begin(), live_.end(), [&](const Live& l) { return !engine_.finished(l.handle); });
  ended(live_.end() - end);
  for (auto l = end; l != live_.end(); ++l) {
    const GenerationResult& r = engine_.result(l->handle);
    if (r.reason == StopReason::Error)  // NaN logits (no result to give), or the request's constraints cannot go on
      l->stream->fail(r.error, r.refused ? RequestStream::Failure::Refused : RequestStream::Failure::Lost);
    else if (r.reason == StopReason::Callback && l->stream->was_cut())
      l->stream->fail("the server is shutting down: this answer was cut short; retry the request",
                      RequestStream::Failure::ShutDown);
    else
      l->stream->finish(r, engine_.output(l->handle));
    engine_.erase(l->handle);
  }
  live_.erase(end, live_.end());
}

void EngineLoop::fail_all(const std::string& message) {
  ended(static_cast<int64_t>(live_.size()));
  for (Live& l : live_) {
    engine_.cancel(l.handle);
    l.stream->fail(message, RequestStream::Failure::Lost);
    engine_.erase(l.handle);
  }
  live_.clear();
}

void EngineLoop::ended(int64_t requests) {
  std::lock_guard lock(mu_);
  unfinished_ -= requests;
}

void EngineLoop::publish_stats() {
  std::lock_guard lock(mu_);
  stats_.running = static_cast<int64_t>(engine_.scheduler().running());
  stats_.waiting = static_cast<int64_t>(engine_.scheduler().waiting());
  stats_.kv_blocks_used = engine_.blocks().used_blocks();
  stats_.prefix_queries = engine_.blocks().prefix_queries();
  stats_.prefix_hits = engine_.blocks().prefix_hits();
  stats_.preemptions = engine_.scheduler().preemptions();
  stats_.draft_tokens = engine_.draft_stats().drafted;
  stats_.draft_accepted = engine_.draft_stats().accepted;
  stats_.running_adapters.clear();
  for (const Sequence* s : engine_.scheduler().running_seqs()) add_adapter(stats_.running_adapters, s->adapter);
  stats_.waiting_adapters.clear();
  for (const Sequence* s : engine_.scheduler().waiting_seqs()) add_adapter(stats_.waiting_adapters, s->adapter);
}

}  // namespace qinfer::engine
