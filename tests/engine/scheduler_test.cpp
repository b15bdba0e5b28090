// Scheduler + BlockManager without a model: a fake runner whose next token
// depends only on a sequence's own ids, so a sequence's output must come out
// the same whatever the batching, chunking and preemption did to it.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>

#include "util/error.h"

using namespace qinfer::engine;

namespace {

int32_t next_token(const std::vector<int32_t>& ids) {
  uint32_t h = 2166136261u;
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 16777619u;
  return static_cast<int32_t>(h % 1000);
}

struct Request {
  std::unique_ptr<Sequence> seq;
  int64_t gen = 0;  // tokens to generate
  int64_t finished_step = -1;
};

std::unique_ptr<Sequence> make_seq(int64_t id, int64_t prompt_len, int32_t salt) {
  auto s = std::make_unique<Sequence>();
  s->id = id;
  for (int64_t t = 0; t < prompt_len; ++t) s->ids.push_back(static_cast<int32_t>((t * 13 + salt) % 997));
  s->prompt_len = prompt_len;
  return s;
}

// The ids a request ends with when it runs alone.
std::vector<int32_t> expected_ids(const Sequence& s, int64_t gen) {
  std::vector<int32_t> ids(s.ids.begin(), s.ids.begin() + s.prompt_len);
  for (int64_t i = 0; i < gen; ++i) ids.push_back(next_token(ids));
  return ids;
}

struct RunStats {
  int64_t steps = 0, preemptions = 0, max_tokens = 0;
  size_t max_running = 0;
};

// Steps until idle; requests[i] is added at step arrival[i]. The fake
// runner generates a token for each sequence whose step reached its last id.
RunStats run(Scheduler& sched, std::vector<Request>& reqs, const std::vector<int64_t>& arrival,
             int64_t max_steps = 10000, const std::function<void(const Step&)>& each_step = {}) {
  RunStats r;
  size_t next = 0;
  for (; r.steps < max_steps; ++r.steps) {
    while (next < reqs.size() && arrival[next] <= r.steps) sched.add(reqs[next++].seq.get());
    if (sched.idle() && next == reqs.size()) break;
    Step step = sched.schedule();
    r.preemptions += static_cast<int64_t>(step.preempted.size());
    r.max_tokens = std::max(r.max_tokens, step.tokens());
    r.max_running = std::max(r.max_running, sched.running());
    if (each_step) each_step(step);
    for (const ScheduledSeq& s : step.seqs) {
      Sequence& q = *s.seq;
      if (q.computed + s.tokens != static_cast<int64_t>(q.ids.size())) continue;  // a prompt chunk
      Request& req = *std::find_if(reqs.begin(), reqs.end(), [&](const Request& x) { return x.seq.get() == &q; });
      q.ids.push_back(next_token(q.ids));
      if (static_cast<int64_t>(q.ids.size()) - q.prompt_len == req.gen) {
        q.status = Sequence::Status::Finished;
        req.finished_step = r.steps;
      }
    }
    sched.complete(step);
  }
  return r;
}

std::vector<Request> random_requests(int n, uint32_t seed, int64_t max_prompt, int64_t max_gen) {
  std::mt19937 rng(seed);
  std::vector<Request> reqs;
  for (int i = 0; i < n; ++i) {
    Request r;
    r.seq = make_seq(i, 1 + static_cast<int64_t>(rng() % max_prompt), static_cast<int32_t>(rng() % 50));
    r.gen = 1 + static_cast<int64_t>(rng() % max_gen);
    reqs.push_back(std::move(r));
  }
  return reqs;
}

void expect_all_finished_as_alone(const std::vector<Request>& reqs) {
  for (const Request& r : reqs) {
    ASSERT_EQ(r.seq->status, Sequence::Status::Finished) << "sequence " << r.seq->id;
    EXPECT_EQ(r.seq->ids, expected_ids(*r.seq, r.gen)) << "sequence " << r.seq->id;
  }
}

}  // namespace

TEST(Scheduler, KeepsTheBudgetAndTheCapAndFinishesEverything) {
  BlockManager bm(64, 4);
  Scheduler sched(bm, 16, 6);
  auto reqs = random_requests(20, 1, 40, 10);
  std::vector<int64_t> arrival(reqs.size());
  for (size_t i = 0; i < arrival.size(); ++i) arrival[i] = static_cast<int64_t>(i / 3);  // staggered
  const RunStats r = run(sched, reqs, arrival);
  EXPECT_LE(r.max_tokens, 16);
  EXPECT_LE(r.max_running, 6u);
  expect_all_finished_as_alone(reqs);
  EXPECT_EQ(bm.free_blocks(), bm.n_blocks());  // every block back at idle
}

TEST(Scheduler, PreemptsWhenBlocksRunOutAndStillFinishesEveryoneCorrectly) {
  BlockManager bm(12, 4);  // 48 positions; each request needs up to 22
  Scheduler sched(bm, 64, 8);
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back({make_seq(i, 10, i), 12, -1});
  const RunStats r = run(sched, reqs, std::vector<int64_t>(reqs.size(), 0));
  EXPECT_GT(r.preemptions, 0);
  EXPECT_EQ(sched.preemptions(), r.preemptions);
  expect_all_finished_as_alone(reqs);
  EXPECT_EQ(bm.free_blocks(), bm.n_blocks());
}

TEST(Scheduler, ALongPromptAmongShortOnesDoesNotStarve) {
  BlockManager bm(256, 8);
  Scheduler sched(bm, 32, 8);
  std::vector<Request> reqs;
  std::vector<int64_t> arrival;
  for (int i = 0; i < 60; ++i) {
    const bool long_one = i == 10;
    reqs.push_back({make_seq(i, long_one ? 400 : 4, i), long_one ? 4 : 20, -1});
    arrival.push_back(i / 2);  // a steady stream of short requests around it
  }
  run(sched, reqs, arrival);
  expect_all_finished_as_alone(reqs);
  // Its 400 prompt tokens take at least 13 steps of a 32-token budget; it
  // must finish before the requests that arrived well after it.
  EXPECT_LT(reqs[10].finished_step, reqs[59].finished_step);
}

TEST(Scheduler, ASharedPromptIsTakenFromThePrefixCache) {
  BlockManager bm(32, 4);
  Scheduler sched(bm, 64, 4);
  std::vector<Request> reqs;
  reqs.push_back({make_seq(0, 17, 3), 2, -1});
  reqs.push_back({make_seq(1, 17, 3), 2, -1});  // the same prompt, arriving after the first is computed
  run(sched, reqs, {0, 5});
  expect_all_finished_as_alone(reqs);
  EXPECT_EQ(reqs[0].seq->cached, 0);
  EXPECT_GE(bm.prefix_hits(), 4);  // the 4 full blocks of the shared 16 tokens
}

// A hunt finding: a prompt preempted in the middle of its prefill found its
// own sealed blocks when readmitted, and its usage reported them as cached
// tokens (prefix-cache hits of other requests' work, which users are billed
// less for). What it reports is what its first admission found.
TEST(Scheduler, APromptPreemptedMidPrefillReportsOnlyWhatItsFirstAdmissionFound) {
  BlockManager bm(4, 4);      // 16 positions
  Scheduler sched(bm, 4, 4);  // a prompt goes in chunks of the 4-token budget
  std::vector<Request> reqs;
  reqs.push_back({make_seq(0, 3, 1), 12, -1});  // grows until it needs the younger one's blocks
  reqs.push_back({make_seq(1, 12, 2), 1, -1});  // arrives next, its prompt in chunks
  int64_t readmitted_with_own_blocks = 0;
  bool preempted = false;
  const RunStats r = run(sched, reqs, {0, 1}, 10000, [&](const Step& step) {
    for (const Sequence* s : step.preempted) preempted |= s == reqs[1].seq.get();
    for (const ScheduledSeq& s : step.seqs)
      if (s.seq == reqs[1].seq.get() && preempted && s.seq->cached > 0) ++readmitted_with_own_blocks;
  });
  expect_all_finished_as_alone(reqs);
  ASSERT_GT(r.preemptions, 0);
  ASSERT_GT(readmitted_with_own_blocks, 0) << "the case this test is about did not happen";
  EXPECT_EQ(reqs[1].seq->first_cached, 0);
  EXPECT_EQ(reqs[0].seq->first_cached, 0);
}

TEST(Scheduler, CancelReleasesBlocksAnywhere) {
  BlockManager bm(16, 4);
  Scheduler sched(bm, 8, 4);
  auto a = make_seq(0, 20, 1), b = make_seq(1, 6, 2);
  sched.add(a.get());
  sched.add(b.get());
  Step step = sched.schedule();  // a's first chunk of 8
  ASSERT_EQ(step.seqs.size(), 1u);
  sched.complete(step);
  sched.cancel(a.get());
  sched.cancel(b.get());  // still waiting
  EXPECT_TRUE(sched.idle());
  EXPECT_EQ(bm.free_blocks(), bm.n_blocks());
}

TEST(Scheduler, APromptLargerThanThePoolIsRefused) {
  BlockManager bm(4, 4);
  Scheduler sched(bm, 64, 4);
  auto s = make_seq(0, 16, 0);  // 16 positions + 1 to generate > 16
  EXPECT_THROW(sched.add(s.get()), qinfer::Error);
}

// A decoding sequence's draft runs with its pending id, cut to the budget
// left, when the blocks allow, else not at all (the step still decodes it);
// only the confirmed part counts as computed, and preemption drops the draft.
TEST(Scheduler, RunsADraftCutToTheBudgetAndCountsOnlyItsConfirmedIds) {
  BlockManager bm(6, 4);  // 24 positions
  Scheduler sched(bm, 8, 4);
  auto seq = make_seq(0, 5, 1);
  sched.add(seq.get());
  Step step = sched.schedule();  // the prompt
  seq->ids.push_back(1);
  sched.complete(step);
  ASSERT_EQ(seq->computed, 5);

  seq->draft = {2, 3, 4};
  step = sched.schedule();
  ASSERT_EQ(step.seqs.size(), 1u);
  EXPECT_EQ(step.seqs[0].tokens, 4);
  EXPECT_EQ(step.seqs[0].drafted, 3);
  EXPECT_EQ(step.seqs[0].pending(), 1);
  seq->ids.insert(seq->ids.end(), {2, 9});  // 2 confirmed, 9 drawn where 3 was drafted
  seq->accepted = 1;
  sched.complete(step);
  EXPECT_EQ(seq->computed, 7) << "the pending id and the one confirmed draft id";
  EXPECT_TRUE(seq->draft.empty());
  EXPECT_EQ(seq->accepted, 0);

  // 1 + 8 ids: over the budget of 8. A hunt finding: it was dropped whole, so a draft length at or above the
  // step's budget never drafted.
  seq->draft = std::vector<int32_t>(8, 5);
  step = sched.schedule();
  EXPECT_EQ(step.seqs[0].tokens, 8);
  EXPECT_EQ(step.seqs[0].drafted, 7);
  EXPECT_EQ(seq->draft, std::vector<int32_t>(7, 5));
  seq->ids.push_back(6);
  sched.complete(step);
  EXPECT_EQ(seq->computed, 8);

  EXPECT_EQ(sched.preemptions(), 0);
}

TEST(Scheduler, ADraftTakesNoBlockFromOthersAndPreemptionDropsIt) {
  BlockManager bm(2, 4);  // 8 positions
  Scheduler sched(bm, 16, 4);
  auto a = make_seq(0, 3, 1), b = make_seq(1, 3, 2);
  sched.add(a.get());
  Step step = sched.schedule();
  a->ids.push_back(1);
  sched.complete(step);
  // A draft of 4 would need a second block for positions 4-7: the step runs a's pending id alone.
  a->draft = {2, 3, 4, 5};
  sched.add(b.get());
  step = sched.schedule();
  ASSERT_EQ(step.seqs.size(), 2u);
  EXPECT_EQ(step.seqs[0].tokens, 1);
  EXPECT_EQ(step.seqs[0].drafted, 0);
  EXPECT_TRUE(a->draft.empty());
  EXPECT_EQ(step.seqs[1].seq, b.get()) << "b's prompt got the block the draft would have taken";
  a->ids.push_back(2);
  b->ids.push_back(3);
  sched.complete(step);
  // a needs b's block for its next position: b (the newest) is preempted, its draft with it.
  b->draft = {4, 5};
  step = sched.schedule();
  ASSERT_EQ(step.preempted.size(), 1u);
  EXPECT_EQ(step.preempted[0], b.get());
  EXPECT_TRUE(b->draft.empty());
  EXPECT_EQ(b->status, Sequence::Status::Waiting);
}

// Prompts whose every position's logits are wanted share 64 rows a step
// (each row keeps a vocabulary of floats), take nothing from the prefix
// cache, and a request behind them waits its turn.
TEST(Scheduler, PromptsThatKeepEveryRowsLogitsShare64RowsAStep) {
  BlockManager blocks(64, 16);
  Scheduler sched(blocks, 512, 8);
  auto cached = make_seq(0, 100, 1);
  sched.add(cached.get());
  Step warm = sched.schedule();
  ASSERT_EQ(warm.tokens(), 100);
  sched.complete(warm);
  cached->status = Sequence::Status::Finished;
  sched.complete({});
  auto a = make_seq(1, 100, 1), b = make_seq(2, 100, 2), plain = make_seq(3, 10, 3);
  a->wants_prompt_logits = b->wants_prompt_logits = true;
  for (Sequence* s : {a.get(), b.get(), plain.get()}) sched.add(s);
  Step first = sched.schedule();
  ASSERT_EQ(first.seqs.size(), 1u) << "b gets no rows this step, and plain does not overtake it";
  EXPECT_EQ(first.seqs[0].seq, a.get());
  EXPECT_EQ(first.seqs[0].tokens, 64);
  EXPECT_EQ(a->cached, 0) << "its prompt is cached, but every row must run";
  sched.complete(first);
  Step second = sched.schedule();
  ASSERT_EQ(second.seqs.size(), 3u);
  EXPECT_EQ(second.seqs[0].tokens, 36);  // a's rest
  EXPECT_EQ(second.seqs[1].tokens, 28);  // b: the rows left
  EXPECT_EQ(second.seqs[2].tokens, 10);  // plain: its whole prompt
  sched.complete(second);
  Step third = sched.schedule();
  ASSERT_EQ(third.seqs.size(), 1u) << "a and plain wait for their next token; b runs on";
  EXPECT_EQ(third.seqs[0].seq, b.get());
  EXPECT_EQ(third.seqs[0].tokens, 64);
}

// vLLM's priority policy: waiting sequences are admitted by priority (lower
// first), then arrival; when blocks run out the least urgent running one is
// preempted, however old. Outputs stay those of each sequence alone.
TEST(Scheduler, RunsTheMoreUrgentFirstAndPreemptsTheLessUrgent) {
  {
    BlockManager bm(64, 4);
    Scheduler sched(bm, 64, 1);  // one at a time: the admission order is the finishing order
    std::vector<Request> reqs;
    const int32_t priority[] = {0, 2, -1, 0};
    for (int i = 0; i < 4; ++i) {
      reqs.push_back({make_seq(i, 6, i), 3, -1});
      reqs.back().seq->priority = priority[i];
    }
    run(sched, reqs, std::vector<int64_t>(reqs.size(), 0));
    expect_all_finished_as_alone(reqs);
    EXPECT_LT(reqs[2].finished_step, reqs[0].finished_step);
    EXPECT_LT(reqs[0].finished_step, reqs[3].finished_step);
    EXPECT_LT(reqs[3].finished_step, reqs[1].finished_step);
  }
  for (const bool older_is_less_urgent : {false, true}) {
    BlockManager bm(12, 4);  // 48 positions; each request needs 30
    Scheduler sched(bm, 64, 8);
    std::vector<Request> reqs;
    for (int i = 0; i < 2; ++i) reqs.push_back({make_seq(i, 10, i), 20, -1});
    if (older_is_less_urgent) reqs[0].seq->priority = 1;
    const RunStats r = run(sched, reqs, {0, 0});
    expect_all_finished_as_alone(reqs);
    EXPECT_GT(r.preemptions, 0);
    const Request& first = reqs[older_is_less_urgent ? 1 : 0];
    const Request& second = reqs[older_is_less_urgent ? 0 : 1];
    EXPECT_LT(first.finished_step, second.finished_step) << "older sequence less urgent: " << older_is_less_urgent;
  }
}
