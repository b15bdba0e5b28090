// The engine requests of one HTTP request that asks for prompt-only results
// (/v1/embeddings: one per input; /v1/rerank: one per document), submitted
// together and collected in order. Waiting is in slices, and between slices
// the caller says whether its client is still there (a write of a space is
// how a server finds out): a client that left cancels them all.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_loop.h"

namespace qinfer::server {

class PromptOnlyBatch {
 public:
  // submit(ids, reservation): EngineLoop::submit_embedding or
  // submit_scoring, each input through `reservation` (room for them all).
  // ApiError 503 (and nothing left queued) when the loop takes no more.
  // `field` names the inputs in errors ("input", "documents").
  using Submit = std::function<std::shared_ptr<engine::RequestStream>(const std::vector<int32_t>&,
                                                                      engine::EngineLoop::Reservation*)>;
  PromptOnlyBatch(const std::vector<std::vector<int32_t>>& inputs, std::string field,
                  engine::EngineLoop::Reservation reservation, const Submit& submit);
  ~PromptOnlyBatch() { cancel(); }
  PromptOnlyBatch(const PromptOnlyBatch&) = delete;
  PromptOnlyBatch& operator=(const PromptOnlyBatch&) = delete;

  // Waits until every output is in (true) or `until` passes (false); every
  // `slice` asks client_there(), and false cancels the rest (false). ApiError
  // for a request that failed (400 naming the field when the engine refused
  // it, 503 at shutdown, 500 otherwise), the rest cancelled.
  bool wait(std::chrono::steady_clock::time_point until, std::chrono::milliseconds slice,
            const std::function<bool()>& client_there);
  // Each request's Engine::output(), in input order, once wait() returned true.
  const std::vector<std::vector<float>>& outputs() const { return outputs_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }  // of all inputs

 private:
  void cancel();
  std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  std::string field_;
  std::vector<std::vector<float>> outputs_;
  int64_t prompt_tokens_ = 0;
};

}  // namespace qinfer::server
