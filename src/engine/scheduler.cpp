#include "engine/scheduler.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::engine {

int64_t Step::tokens() const {
  int64_t n = 0;
  for (const ScheduledSeq& s : seqs) n += s.tokens;
  return n;
}

Scheduler::Scheduler(BlockManager& blocks, int64_t max_batch_tokens, int64_t max_running)
    : blocks_(blocks), max_batch_tokens_(max_batch_tokens), max_running_(max_running) {
  if (max_batch_tokens < 1 || max_running < 1)
    fail("scheduler: max batch tokens (", max_batch_tokens, ") and max running sequences (", max_running,
         ") must be at least 1");
}

namespace {

// The scheduler's order: the more urgent first (a lower priority), then the older.
bool runs_before(const Sequence* a, const Sequence* b) {
  return a->priority != b->priority ? a->priority < b->priority : a->id < b->id;
}

// Puts seq into `queue` (kept in that order) after everything that runs before it.
template <class Queue>
void insert_in_order(Queue& queue, Sequence* seq) {
  queue.insert(std::upper_bound(queue.begin(), queue.end(), seq, runs_before), seq);
}

}  // namespace

void Scheduler::add(Sequence* seq) {
  if (seq->ids.empty()) fail("scheduler: sequence ", seq->id, " has no tokens");
  // One more position than the prompt: it must be able to generate alone.
  const int64_t need = (static_cast<int64_t>(seq->ids.size()) + blocks_.block_size()) / blocks_.block_size();
  if (need > blocks_.n_blocks())
    fail("a prompt of ", seq->ids.size(), " tokens needs ", need, " KV blocks of ", blocks_.block_size(),
         " positions; the pool has ", blocks_.n_blocks());
  seq->status = Sequence::Status::Waiting;
  insert_in_order(waiting_, seq);
}

void Scheduler::cancel(Sequence* seq) {
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  blocks_.release(*seq);
  seq->status = Sequence::Status::Finished;
}

void Scheduler::preempt(Sequence* seq, Step& step) {
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  blocks_.release(*seq);  // recomputed later, from the prefix cache where it still holds
  seq->draft.clear();
  seq->status = Sequence::Status::Waiting;
  // Back among the waiting in order, so it runs before newer ones of its priority.
  insert_in_order(waiting_, seq);
  step.preempted.push_back(seq);
  ++preemptions_;
}

namespace {

// A step keeps the logits of every row of a prompt that wants its prompt
// log-probabilities: a vocabulary of floats each. Capped, they take 64 x
// 151,936 floats (39 MB) for Qwen3 where a 512-token step of them would take
// 311 MB.
constexpr int64_t kPromptLogitRows = 64;

// What a step has left: tokens, and rows whose logits it keeps.
struct Budget {
  int64_t tokens, logit_rows = kPromptLogitRows;
  // The tokens of `seq` the step runs (0: none).
  int64_t take(const Sequence& seq) const {
    return std::min({seq.pending(), tokens, seq.wants_prompt_logits ? logit_rows : tokens});
  }
  void spend(const Sequence& seq, int64_t n) {
    tokens -= n;
    if (seq.wants_prompt_logits) logit_rows -= n;
  }
};

}  // namespace

Step Scheduler::schedule() {
  Step step;
  Budget budget{max_batch_tokens_};
  // Running sequences in order; when blocks run out, the last running one
  // (the newest of the least urgent) gives its blocks up (possibly the one
  // being scheduled).
  for (size_t i = 0; i < running_.size() && budget.tokens > 0;) {
    Sequence* seq = running_[i];
    const int64_t tokens = budget.take(*seq);
    if (tokens == 0) {  // the step keeps no more logit rows: its prompt goes on next step
      ++i;
      continue;
    }
    if (blocks_.reserve(*seq, seq->computed + tokens)) {
      step.seqs.push_back({seq, tokens});
      budget.spend(*seq, tokens);
      ++i;
      continue;
    }
    Sequence* newest = running_.back();
    preempt(newest, step);
    if (newest == seq) break;
  }
  // Waiting sequences in order, while they fit; the first that does not fit
  // stops admission (no overtaking, so it cannot starve behind its equals).
  while (!waiting_.empty() && budget.tokens > 0 && static_cast<int64_t>(running_.size()) < max_running_) {
    Sequence* seq = waiting_.front();
    if (std::find(step.preempted.begin(), step.preempted.end(), seq) != step.preempted.end()) break;  // not this step
    const BlockManager::Lookup lookup = blocks_.match_prefix(*seq);
    const int64_t tokens = budget.take(*seq);  // 0: the step keeps no more logit rows
    if (tokens == 0 || !blocks_.reserve(*seq, seq->computed + tokens)) {
      blocks_.release(*seq);
      break;
    }
    blocks_.record_lookup(lookup);
    if (seq->first_cached < 0) seq->first_cached = seq->cached;
    waiting_.pop_front();
    seq->status = Sequence::Status::Running;
    insert_in_order(running_, seq);
    step.seqs.push_back({seq, tokens});
    budget.spend(*seq, tokens);
  }
  // Drafts last, from the budget and blocks left: a draft never delays
  // another sequence or preempts one. One longer than the budget left is cut
  // to it (a hunt finding: dropped whole, a --draft at or above
  // --max-batch-tokens never drafted); one that needs blocks none has free
  // runs not at all.
  for (ScheduledSeq& s : step.seqs) {
    Sequence& seq = *s.seq;
    const int64_t drafted = std::min(static_cast<int64_t>(seq.draft.size()), budget.tokens);
    if (drafted > 0 && s.tokens == seq.pending() && blocks_.reserve(seq, seq.computed + s.tokens + drafted)) {
      seq.draft.resize(static_cast<size_t>(drafted));
      s.tokens += drafted;
      s.drafted = drafted;
      budget.tokens -= drafted;
    } else {
      seq.draft.clear();
    }
  }
  return step;
}

void Scheduler::complete(const Step& step) {
  for (const ScheduledSeq& s : step.seqs) {
    s.seq->computed += s.pending() + s.seq->accepted;  // a rejected draft's keys/values are overwritten later
    s.seq->accepted = 0;
    s.seq->draft.clear();
    blocks_.seal(*s.seq);
  }
  for (size_t i = 0; i < running_.size();) {
    Sequence* seq = running_[i];
    if (seq->status != Sequence::Status::Finished) {
      ++i;
      continue;
    }
    blocks_.release(*seq);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

}  // namespace qinfer::engine
