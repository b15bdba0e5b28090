#include "engine/prediction_draft.h"

#include <algorithm>
#include <utility>

namespace qinfer::engine {

PredictionDraft::PredictionDraft(std::shared_ptr<const Prediction> prediction, int64_t max_tokens)
    : prediction_(std::move(prediction)), max_tokens_(max_tokens), state_(prediction_->ids().size(), kUndrafted) {}

bool PredictionDraft::propose(std::span<const int32_t> output, int64_t max_tokens, std::vector<int32_t>& draft) {
  draft.clear();
  const std::span<const int32_t> p = prediction_->ids();
  const auto out_len = static_cast<int64_t>(output.size()), len = static_cast<int64_t>(p.size());
  const int64_t want = std::min(max_tokens_, max_tokens);
  if (want <= 0) return false;
  auto take_from = [&](int64_t from) {
    draft_at_ = from;
    draft.assign(p.begin() + from, p.begin() + std::min(len, from + want));
    return !draft.empty();
  };
  // Still on the prediction's start? Only the ids added since the last call are compared.
  while (prefix_ >= 0 && prefix_ < out_len)
    prefix_ =
        prefix_ < len && output[static_cast<size_t>(prefix_)] == p[static_cast<size_t>(prefix_)] ? prefix_ + 1 : -1;
  if (prefix_ >= 0) return take_from(out_len);
  for (int64_t n = std::min<int64_t>(Prediction::kMaxNgram, out_len); n >= Prediction::kMinNgram; --n) {
    const int64_t start = prediction_->find(output.last(static_cast<size_t>(n)), std::max<int64_t>(draft_at_ - n, 0));
    if (start >= 0) return take_from(start + n);
  }
  return false;
}

void PredictionDraft::confirm(int64_t drafted, int64_t confirmed) {
  for (int64_t k = 0; k < drafted && draft_at_ + k < static_cast<int64_t>(state_.size()); ++k) {
    State& s = state_[static_cast<size_t>(draft_at_ + k)];
    if (k < confirmed) {
      rejected_ -= s == kRejected;
      s = kConfirmed;
    } else if (s == kUndrafted) {
      rejected_ += 1;
      s = kRejected;
    }
  }
}

}  // namespace qinfer::engine
