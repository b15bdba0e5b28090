#include "server/prompt_only_batch.h"

#include <algorithm>

#include "server/api_error.h"

namespace qinfer::server {

PromptOnlyBatch::PromptOnlyBatch(const std::vector<std::vector<int32_t>>& inputs, std::string field,
                                 engine::EngineLoop::Reservation reservation, const Submit& submit)
    : field_(std::move(field)) {
  for (const std::vector<int32_t>& ids : inputs) {
    prompt_tokens_ += static_cast<int64_t>(ids.size());
    streams_.push_back(submit(ids, &reservation));
    if (!streams_.back()) {
      streams_.pop_back();
      cancel();
      throw ApiError(503, kBusy);
    }
  }
}

void PromptOnlyBatch::cancel() {
  for (auto& s : streams_) s->cancel();
}

bool PromptOnlyBatch::wait(std::chrono::steady_clock::time_point until, std::chrono::milliseconds slice,
                           const std::function<bool()>& client_there) {
  using Clock = std::chrono::steady_clock;
  while (outputs_.size() < streams_.size()) {
    engine::RequestStream& stream = *streams_[outputs_.size()];
    std::vector<int32_t> none;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    const auto state = stream.wait(none, std::max(std::chrono::milliseconds(0), std::min(slice, left)));
    if (state == engine::RequestStream::State::Finished) {
      outputs_.push_back(stream.output());
      continue;
    }
    if (state == engine::RequestStream::State::Failed) {
      cancel();
      const std::string why = field_ + " " + std::to_string(outputs_.size()) + ": " + stream.error();
      switch (stream.failure()) {
        case engine::RequestStream::Failure::Refused:
          if (why.find("was unloaded") != std::string::npos) throw ApiError(404, why, "model");  // as completions'
          throw ApiError(400, why, field_);
        case engine::RequestStream::Failure::ShutDown:
          throw ApiError(503, why);
        case engine::RequestStream::Failure::Lost:
          throw ApiError(500, why);
      }
    }
    if (Clock::now() >= until) return false;
    if (!client_there()) {
      cancel();
      return false;
    }
  }
  return true;
}

}  // namespace qinfer::server
