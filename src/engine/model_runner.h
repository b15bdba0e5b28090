// A scheduled step through the model: the step's sequences become one varlen
// Batch over the engine's KV pool, and each sequence whose step reaches its
// last known id gets that position's logits, or its final hidden state when
// it is an embedding request (a prompt chunk that stops short of it needs
// neither); a sequence with a draft, the logits of that position and of each
// draft id after it; one that wants its prompt's logits, those of every row.
#pragma once
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "model/qwen3.h"

namespace qinfer::engine {

class ModelRunner {
 public:
  ModelRunner(const Qwen3Model& model, KvPool& kv, ThreadPool& pool) : model_(model), kv_(kv), pool_(pool) {}

  // Runs the step; logits(i) is then the logits row of step.seqs[i], or
  // empty when that sequence's step was a prompt chunk short of its end;
  // logits(i, d) that of its d-th draft id (d < logit_rows(i)).
  void run(const Step& step);
  std::span<const float> logits(size_t i, int64_t d = 0) const;
  int64_t logit_rows(size_t i) const { return logit_rows_[i]; }
  // The logits of row j of step.seqs[i]'s tokens this step (the position
  // computed + j), when it wants its prompt's logits; else empty.
  std::span<const float> chunk_logits(size_t i, int64_t j) const;
  // The final hidden state of step.seqs[i], when it wants one and reached its end; else empty.
  std::span<const float> hidden(size_t i) const;

 private:
  const Qwen3Model& model_;
  KvPool& kv_;
  ThreadPool& pool_;
  ForwardState state_;
  Batch batch_;
  std::span<const float> logits_;
  std::vector<int64_t> logit_row_;   // per scheduled sequence: its first row in logits_, or -1
  std::vector<int64_t> logit_rows_;  // per scheduled sequence: its rows in logits_ (1 + its draft's, or 0)
  std::vector<int64_t> chunk_row_;   // per scheduled sequence: the row of its first token when all have logits, or -1
  std::vector<int64_t> hidden_row_;  // per scheduled sequence: its row in state_.hidden, or -1
};

}  // namespace qinfer::engine
