// Which sequences run in the next step, and how many of their tokens: one
// token budget per step (vLLM v1's scheduler), running sequences first (a
// decode token, or the next chunk of a prompt being prefilled), then waiting
// ones while blocks, the budget and the cap on running sequences allow (a new
// one starts from the longest cached prefix). Both queues run in order of
// priority (Sequence::priority, lower first; vLLM's priority policy), then
// arrival. When the blocks run out, the last running sequence in that order
// is preempted: its blocks are released and it waits again, to be
// recomputed, ahead of newer arrivals of its priority. So the first sequence
// always progresses, and among equal priorities nothing starves (a stream of
// more urgent ones may hold a less urgent one back). Last, a decoding
// sequence's draft (speculative decoding) runs with it when the budget and
// blocks left take it whole. The sequences that want every prompt
// position's logits (prompt log-probabilities) run at most 64 prompt tokens
// a step between them, so their logits stay a bounded buffer. Pure logic over
// Sequence and BlockManager; the tests run it without a model.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/block_manager.h"
#include "engine/sequence.h"

namespace qinfer::engine {

struct ScheduledSeq {
  Sequence* seq;
  int64_t tokens;       // ids [seq->computed, seq->computed + tokens) run this step, then the draft's
  int64_t drafted = 0;  // of `tokens`, the draft's: seq->draft, whole
  int64_t pending() const { return tokens - drafted; }
};

struct Step {
  std::vector<ScheduledSeq> seqs;  // running order: the first (most urgent, then oldest) first
  std::vector<Sequence*> preempted;
  int64_t tokens() const;
};

class Scheduler {
 public:
  Scheduler(BlockManager& blocks, int64_t max_batch_tokens, int64_t max_running);

  // A new sequence (ids = its prompt); sequences are added in arrival order.
  void add(Sequence* seq);
  // Removes a sequence wherever it is, releasing its blocks.
  void cancel(Sequence* seq);
  // The next step; empty when nothing is waiting or running.
  Step schedule();
  // After the step ran: the computed tokens are recorded (the runner appends
  // generated ids, and the draft ids it confirmed, seq->accepted), full blocks
  // sealed into the prefix cache; finished sequences (status Finished) leave
  // and release their blocks.
  void complete(const Step& step);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  const std::deque<Sequence*>& waiting_seqs() const { return waiting_; }
  const std::vector<Sequence*>& running_seqs() const { return running_; }
  // Sequences preempted so far (each time counts).
  int64_t preemptions() const { return preemptions_; }

 private:
  void preempt(Sequence* seq, Step& step);

  BlockManager& blocks_;
  int64_t max_batch_tokens_, max_running_;
  std::deque<Sequence*> waiting_;   // in order: priority, then arrival
  std::vector<Sequence*> running_;  // in the same order
  int64_t preemptions_ = 0;
};

}  // namespace qinfer::engine
