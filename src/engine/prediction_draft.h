// Drafts for speculative decoding from a request's prediction
// (runtime/prediction.h, OpenAI's predicted outputs): while the answer is a
// prefix of the prediction, its next ids; else the ids after an occurrence
// in it of the answer's last n ids (the longest n that occurs), the first at
// or after where the previous draft started (answers follow their prediction
// in order), else the first. It also counts the prediction's ids drafted and
// never confirmed (OpenAI's rejected prediction tokens). Pure logic, one per
// sequence.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/prediction.h"

namespace qinfer::engine {

class PredictionDraft {
 public:
  // Drafts of at most max_tokens ids.
  PredictionDraft(std::shared_ptr<const Prediction> prediction, int64_t max_tokens);

  // Sets `draft` to at most `max_tokens` ids to follow `output`, the answer
  // so far (it only grows between calls); false, with `draft` empty, when
  // the prediction has nothing to follow it.
  bool propose(std::span<const int32_t> output, int64_t max_tokens, std::vector<int32_t>& draft);
  // The last draft ran, all `drafted` of its ids, and the answer holds the
  // first `confirmed` of them.
  void confirm(int64_t drafted, int64_t confirmed);

  int64_t rejected() const { return rejected_; }  // the prediction's ids drafted, never confirmed

 private:
  std::shared_ptr<const Prediction> prediction_;
  int64_t max_tokens_;
  int64_t prefix_ = 0;  // leading output ids equal to the prediction's; -1 once one is not
  int64_t draft_at_ = 0;
  enum State : uint8_t { kUndrafted, kRejected, kConfirmed };
  std::vector<State> state_;  // per prediction id
  int64_t rejected_ = 0;
};

}  // namespace qinfer::engine
