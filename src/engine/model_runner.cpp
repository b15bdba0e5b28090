#include "engine/model_runner.h"

namespace qinfer::engine {

void ModelRunner::run(const Step& step) {
  batch_.tokens.clear();
  batch_.seqs.clear();
  logit_row_.clear();
  int64_t rows = 0;
  for (const ScheduledSeq& s : step.seqs) {
    const Sequence& q = *s.seq;
    const auto first = q.ids.begin() + q.computed;
    batch_.tokens.insert(batch_.tokens.end(), first, first + s.tokens);
    const bool at_end = q.computed + s.tokens == static_cast<int64_t>(q.ids.size());
    batch_.seqs.push_back({s.tokens, q.computed, q.blocks, at_end ? BatchSeq::Logits::Last : BatchSeq::Logits::None});
    logit_row_.push_back(at_end ? rows++ : -1);
  }
  logits_ = batch_.tokens.empty() ? std::span<const float>() : forward(model_, batch_, kv_, state_, pool_);
}

std::span<const float> ModelRunner::logits(size_t i) const {
  if (logit_row_[i] < 0) return {};
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  return logits_.subspan(static_cast<size_t>(logit_row_[i]) * V, V);
}

}  // namespace qinfer::engine
