#include "engine/prediction_draft.h"

#include <algorithm>

namespace qinfer::engine {

namespace {

constexpr int32_t kMoreNgramSizes = 3;  // sizes indexed beyond min_ngram: the index holds ids x sizes entries

uint64_t hash_of(std::span<const int32_t> ids) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the ids
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 0x100000001b3ull;
  return h;
}

}  // namespace

PredictionDraft::PredictionDraft(std::shared_ptr<const std::vector<int32_t>> prediction,
                                 const NgramDraftOptions& options)
    : prediction_(std::move(prediction)), options_(options), state_(prediction_->size(), kUndrafted) {
  options_.max_ngram = std::min(options.max_ngram, options.min_ngram + kMoreNgramSizes);
  const std::span<const int32_t> p = *prediction_;
  const auto len = static_cast<int64_t>(p.size());
  for (int32_t n = options_.min_ngram; n <= options_.max_ngram; ++n) {
    std::vector<std::pair<uint64_t, int64_t>>& entries = index_.emplace_back();
    for (int64_t start = 0; start + n < len; ++start)  // followed by at least one id
      entries.emplace_back(hash_of(p.subspan(static_cast<size_t>(start), static_cast<size_t>(n))), start);
    std::sort(entries.begin(), entries.end());
  }
}

int64_t PredictionDraft::find(std::span<const int32_t> ids, int64_t from) const {
  const auto& entries = index_[ids.size() - static_cast<size_t>(options_.min_ngram)];
  const uint64_t h = hash_of(ids);
  const auto first = std::lower_bound(entries.begin(), entries.end(), std::pair<uint64_t, int64_t>{h, 0});
  const auto end = std::upper_bound(first, entries.end(), std::pair<uint64_t, int64_t>{h, INT64_MAX});
  auto matches = [&](int64_t start) {
    return std::equal(ids.begin(), ids.end(), prediction_->begin() + start);  // not another n-gram of that hash
  };
  for (auto it = std::lower_bound(first, end, std::pair<uint64_t, int64_t>{h, from}); it != end; ++it)
    if (matches(it->second)) return it->second;
  for (auto it = first; it != end && it->second < from; ++it)
    if (matches(it->second)) return it->second;
  return -1;
}

bool PredictionDraft::propose(std::span<const int32_t> output, int64_t max_tokens, std::vector<int32_t>& draft) {
  draft.clear();
  const std::span<const int32_t> p = *prediction_;
  const auto out_len = static_cast<int64_t>(output.size()), len = static_cast<int64_t>(p.size());
  const int64_t want = std::min<int64_t>(options_.max_tokens, max_tokens);
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
  for (int64_t n = std::min<int64_t>(options_.max_ngram, out_len); n >= options_.min_ngram; --n) {
    const int64_t start = find(output.last(static_cast<size_t>(n)), std::max<int64_t>(draft_at_ - n, 0));
    if (start >= 0) return take_from(start + n);
  }
  return false;
}

void PredictionDraft::confirm(int64_t drafted, int64_t confirmed) {
  accepted_ += confirmed;
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
