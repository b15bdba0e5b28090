// Drafts for speculative decoding from a request's prediction (OpenAI's
// predicted outputs: the text its answer is expected to repeat, such as the
// file an edit rewrites): while the answer is a prefix of the prediction, its
// next ids; else the ids after an occurrence in it of the answer's last n ids
// (the longest n that occurs), the first at or after where the previous draft
// started (answers follow their prediction in order), else the first. An
// index of the prediction's n-grams, built once, makes each draft a lookup.
// It also counts the answer's ids its drafts gave and the prediction's ids
// drafted and never confirmed (OpenAI's accepted and rejected prediction
// tokens: a repetitive answer may take one part of it several times).
// Pure logic.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "engine/ngram_draft.h"

namespace qinfer::engine {

class PredictionDraft {
 public:
  // Drafts of at most options.max_tokens ids, looked up by n-grams of
  // options.min_ngram to at most 4 more than that (max_ngram permitting).
  PredictionDraft(std::shared_ptr<const std::vector<int32_t>> prediction, const NgramDraftOptions& options);

  // Sets `draft` to at most `max_tokens` ids to follow `output`, the answer
  // so far (it only grows between calls); false, with `draft` empty, when
  // the prediction has nothing to follow it.
  bool propose(std::span<const int32_t> output, int64_t max_tokens, std::vector<int32_t>& draft);
  // The last draft ran, all `drafted` of its ids, and the answer holds the
  // first `confirmed` of them.
  void confirm(int64_t drafted, int64_t confirmed);

  int64_t accepted() const { return accepted_; }  // the answer's ids that came from confirmed drafts
  int64_t rejected() const { return rejected_; }  // the prediction's ids drafted, never confirmed

 private:
  // The first occurrence of `ids` at or after `from` (then from the start),
  // followed by at least one id; -1 when none.
  int64_t find(std::span<const int32_t> ids, int64_t from) const;

  std::shared_ptr<const std::vector<int32_t>> prediction_;
  NgramDraftOptions options_;
  // Per n-gram size (min_ngram + k): (hash of the n ids, where they start), sorted.
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> index_;
  int64_t prefix_ = 0;  // leading output ids equal to the prediction's; -1 once one is not
  int64_t draft_at_ = 0;
  enum State : uint8_t { kUndrafted, kRejected, kConfirmed };
  std::vector<State> state_;  // per prediction id
  int64_t accepted_ = 0, rejected_ = 0;
};

}  // namespace qinfer::engine
