// Speculative decoding (prompt-lookup drafts) in the engine: each request
// ends with exactly the ids, reasons and log-probabilities it gets without
// drafts (and alone, from Session), whether its drafts are confirmed (a
// scripted model that repeats its prompt) or rejected (random weights), in
// every weight format, chunked, preempted, capped by max_tokens and by the
// context; confirmed drafts give several tokens a step.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "model/test_model.h"
#include "test_request.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using namespace qinfer::engine;

using test::Req;

namespace {

struct Outcome {
  std::vector<GenerationResult> results;
  int64_t steps = 0;
  Engine::DraftStats drafts;
};

Outcome run(const Qwen3Model& model, ThreadPool& pool, const EngineOptions& o, const std::vector<Req>& reqs) {
  Engine engine(model, pool, o);
  std::vector<int64_t> handles;
  for (const Req& r : reqs) handles.push_back(engine.add(r.prompt, r.opts));
  Outcome out;
  while (engine.step()) ++out.steps;
  for (int64_t h : handles) out.results.push_back(engine.result(h));
  out.drafts = engine.draft_stats();
  EXPECT_EQ(engine.blocks().used_blocks(), 0);
  return out;
}

void expect_same_results(const Outcome& got, const Outcome& want, const char* what) {
  ASSERT_EQ(got.results.size(), want.results.size());
  for (size_t i = 0; i < got.results.size(); ++i) {
    const GenerationResult &g = got.results[i], &w = want.results[i];
    EXPECT_EQ(g.ids, w.ids) << what << ": request " << i;
    EXPECT_EQ(g.reason, w.reason) << what << ": request " << i;
    ASSERT_EQ(g.logprobs.size(), w.logprobs.size()) << what << ": request " << i;
    for (size_t t = 0; t < g.logprobs.size(); ++t) {
      EXPECT_EQ(g.logprobs[t].id, w.logprobs[t].id);
      EXPECT_EQ(g.logprobs[t].logprob, w.logprobs[t].logprob) << what << ": request " << i << " token " << t;
      EXPECT_EQ(g.logprobs[t].top, w.logprobs[t].top) << what << ": request " << i << " token " << t;
    }
  }
}

EngineOptions with_drafts(EngineOptions o, NgramDraftOptions d) {
  o.draft_tokens = d.max_tokens;
  o.draft_min_ngram = d.min_ngram;
  o.draft_max_ngram = d.max_ngram;
  return o;
}

constexpr int32_t kEos = 2047;

}  // namespace

// A scripted model continues its chain whatever came before, so a prompt
// holding the chain and then its start again is continued as it was written
// there: the drafts copied from the prompt are confirmed.
TEST(Speculation, ConfirmedDraftsGiveSeveralTokensAStepAndTheSameIds) {
  test::ScratchDir dir("speculation-scripted");
  std::vector<int32_t> chain;
  for (int32_t k = 0; k < 40; ++k) chain.push_back(100 + 37 * k);
  chain.push_back(kEos);
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 2048;  // cheap draws under the sanitizers
  config.eos_token_ids = {kEos};
  write_scripted_test_model(dir.path(), config, DType::BF16, chain);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(2);

  std::vector<Req> reqs(5);
  const auto from = [&](int64_t a, int64_t b) { return std::vector<int32_t>(chain.begin() + a, chain.begin() + b); };
  for (Req& r : reqs) {
    r.prompt = from(0, 40);
    const std::vector<int32_t> again = from(0, 4);
    r.prompt.insert(r.prompt.end(), again.begin(), again.end());
    r.opts.max_new_tokens = 60;
    r.opts.eos_ids = {kEos};
    r.opts.sampling.temperature = 0;
  }
  reqs[1].opts.sampling.temperature = 0.8f;  // sampled: one draw per token, as without drafts
  reqs[1].opts.sampling.top_k = 40;
  reqs[1].opts.sampling.seed = 7;
  reqs[1].opts.logprobs = 2;
  reqs[2].opts.max_new_tokens = 7;  // drafts stop at the request's end
  reqs[3].opts.ignore_eos = true;   // past eos the chain's start follows, unlike the prompt's copy: rejected
  reqs[3].opts.max_new_tokens = 45;
  reqs[4].prompt = from(0, 10);  // after chain[9] the prompt went on with chain[0], the model goes on with chain[10]
  const std::vector<int32_t> again = from(0, 3);
  reqs[4].prompt.insert(reqs[4].prompt.end(), again.begin(), again.end());

  const EngineOptions one_at_a_time{16, 0, 512, 1}, together{16, 0, 512, 16};
  for (const EngineOptions& o : {one_at_a_time, together}) {
    const Outcome plain = run(*model, pool, o, reqs);
    const Outcome drafted = run(*model, pool, with_drafts(o, {4, 1, 4}), reqs);
    expect_same_results(drafted, plain, o.max_running == 1 ? "one at a time" : "together");
    EXPECT_EQ(plain.results[0].ids, from(4, 41)) << "the chain to its eos";
    EXPECT_EQ(plain.results[2].ids.size(), 7u);
    EXPECT_EQ(plain.drafts.drafted, 0);
    EXPECT_GT(drafted.drafts.accepted, 80) << "most of the 5 requests' tokens came from confirmed drafts";
    EXPECT_LT(drafted.drafts.accepted, drafted.drafts.drafted) << "requests 3 and 4 had drafts rejected";
    if (o.max_running == 1) {
      EXPECT_LT(drafted.steps * 2, plain.steps) << "a confirmed draft of 4 gives 5 tokens a step";
    }
  }
  for (const Req& r : reqs) {
    Session solo(*model, pool);
    EXPECT_EQ(run(*model, pool, with_drafts({}, {4, 1, 4}), {r}).results[0].ids,
              solo.generate(r.prompt, r.opts, {}).ids);
  }
}

// Random weights rarely confirm a draft: every rejected one must leave the
// request exactly as it was (its keys/values past the confirmed ids are
// overwritten, its sampler and penalties see only confirmed ids). A
// vocabulary of 512 makes generated ids recur, so drafts are proposed.
TEST(Speculation, RejectedDraftsChangeNothingInAnyWeightFormat) {
  test::ScratchDir dir("speculation-random");
  for (const char* preset : {"tiny", "tiny-moe"}) {
    Qwen3Config config = test_model_preset(preset);
    config.vocab_size = 512;
    config.eos_token_ids = {7};
    write_test_model(dir.file(preset), config, DType::BF16, 5);
  }
  std::vector<Req> reqs;
  for (int i = 0; i < 6; ++i) {
    Req r;
    for (int t = 0; t < 12 + 3 * i; ++t) r.prompt.push_back(17 * ((t * (i + 2)) % (3 + i)));  // repeats
    r.opts.max_new_tokens = 10 + 2 * i;
    r.opts.ignore_eos = true;
    r.opts.sampling.temperature = i % 2 ? 0.9f : 0.0f;
    r.opts.sampling.seed = 11 + static_cast<uint64_t>(i);
    if (i == 3) r.opts.sampling.repetition_penalty = 1.3f;  // reads the history each draw
    if (i == 5) r.opts.sampling.frequency_penalty = 0.5f;
    r.opts.logprobs = i % 3 == 0 ? 3 : -1;
    reqs.push_back(std::move(r));
  }
  ThreadPool pool(2);
  for (const char* weights : {"stored", "q8", "q4", "bf16_products", "moe"}) {
    LoadOptions lo;
    if (std::string(weights) == "q8") lo.weights = WeightFormat::Q8;
    if (std::string(weights) == "q4") lo.weights = WeightFormat::Q4;
    if (std::string(weights) == "bf16_products") {
      lo.weights = WeightFormat::BF16;
      lo.bf16_products = true;
    }
    auto model = Qwen3Model::load(dir.file(std::string(weights) == "moe" ? "tiny-moe" : "tiny"), lo);
    struct Config {
      EngineOptions o;
      const char* what;
    };
    EngineOptions capped{16, 0, 512, 16};
    capped.context = 40;  // some requests end by the context: drafts stop short of it
    for (const Config& c : {Config{{16, 0, 512, 16}, "together"}, Config{{4, 9, 8, 8}, "chunked, preempted"},
                            Config{capped, "context 40"}}) {
      const Outcome plain = run(*model, pool, c.o, reqs);
      const Outcome drafted = run(*model, pool, with_drafts(c.o, {3, 1, 3}), reqs);
      SCOPED_TRACE(weights);
      expect_same_results(drafted, plain, c.what);
      EXPECT_GT(drafted.drafts.drafted, 20) << c.what;
    }
  }
}

// A draft costs a row per id, as much as any other row where a step is not
// memory-bound: a sequence whose drafts are rejected drafts single ids, and
// longer ones again as they are confirmed.
TEST(Speculation, RejectedDraftsMakeTheNextOnesShort) {
  test::ScratchDir dir("speculation-short");
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 64;  // sampled ids recur: many drafts, few confirmed
  config.eos_token_ids = {7};
  write_test_model(dir.path(), config, DType::BF16, 9);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(1);
  Req r;
  r.prompt = {1, 2, 3, 1, 2, 3};
  r.opts.max_new_tokens = 300;
  r.opts.ignore_eos = true;
  r.opts.sampling.temperature = 1.0f;
  r.opts.sampling.seed = 3;
  const Outcome drafted = run(*model, pool, with_drafts({}, {6, 1, 4}), {r});
  EXPECT_EQ(drafted.results[0].ids, run(*model, pool, {}, {r}).results[0].ids);
  EXPECT_GT(drafted.drafts.drafts, 50);
  EXPECT_LT(drafted.drafts.accepted * 4, drafted.drafts.drafted) << "mostly rejected";
  EXPECT_LT(drafted.drafts.drafted, 2 * drafted.drafts.drafts) << "drafts of 6 ids would average near 6";
}

TEST(Speculation, DraftOptionsOutOfRangeAreRefused) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EXPECT_THROW(Engine(*model, pool, with_drafts({}, {-1, 1, 4})), Error);
  EXPECT_THROW(Engine(*model, pool, with_drafts({}, {4, 0, 4})), Error);
  EXPECT_THROW(Engine(*model, pool, with_drafts({}, {4, 3, 2})), Error);
}
