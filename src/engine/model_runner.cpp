#include "engine/model_runner.h"

namespace qinfer::engine {

void ModelRunner::run(const Step& step) {
  batch_.tokens.clear();
  batch_.seqs.clear();
  logit_row_.clear();
  logit_rows_.clear();
  chunk_row_.clear();
  hidden_row_.clear();
  int64_t logit_rows = 0, hidden_rows = 0;
  for (const ScheduledSeq& s : step.seqs) {
    const Sequence& q = *s.seq;
    const auto first = q.ids.begin() + q.computed;
    batch_.tokens.insert(batch_.tokens.end(), first, first + s.pending());
    batch_.tokens.insert(batch_.tokens.end(), q.draft.begin(), q.draft.begin() + s.drafted);
    const bool at_end = q.computed + s.pending() == static_cast<int64_t>(q.ids.size());
    const BatchSeq::Logits out = q.wants_prompt_logits || s.drafted > 0 ? BatchSeq::Logits::All
                                 : !at_end                              ? BatchSeq::Logits::None
                                 : q.wants_hidden                       ? BatchSeq::Logits::Hidden
                                                                        : BatchSeq::Logits::Last;
    batch_.seqs.push_back({s.tokens, q.computed, q.blocks, out, q.adapter});
    const int64_t rows = out == BatchSeq::Logits::All ? s.tokens : out == BatchSeq::Logits::Last ? 1 : 0;
    chunk_row_.push_back(q.wants_prompt_logits ? logit_rows : -1);
    logit_row_.push_back(at_end && rows > 0 ? logit_rows + rows - 1 - s.drafted : -1);
    logit_rows_.push_back(at_end && rows > 0 ? 1 + s.drafted : 0);
    logit_rows += rows;
    hidden_row_.push_back(out == BatchSeq::Logits::Hidden ? hidden_rows++ : -1);
  }
  logits_ = batch_.tokens.empty() ? std::span<const float>() : forward(model_, batch_, kv_, state_, pool_);
}

std::span<const float> ModelRunner::logits(size_t i, int64_t d) const {
  if (logit_row_[i] < 0) return {};
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  return logits_.subspan(static_cast<size_t>(logit_row_[i] + d) * V, V);
}

std::span<const float> ModelRunner::chunk_logits(size_t i, int64_t j) const {
  if (chunk_row_[i] < 0) return {};
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  return logits_.subspan(static_cast<size_t>(chunk_row_[i] + j) * V, V);
}

std::span<const float> ModelRunner::hidden(size_t i) const {
  if (hidden_row_[i] < 0) return {};
  const size_t H = static_cast<size_t>(model_.config().hidden_size);
  return std::span<const float>(state_.hidden).subspan(static_cast<size_t>(hidden_row_[i]) * H, H);
}

}  // namespace qinfer::engine
