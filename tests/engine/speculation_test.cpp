// Speculative decoding in the engine, by prompt lookup and by a draft model:
// each request ends with exactly the ids, reasons and log-probabilities it
// gets without drafts (and alone, from Session), whether its drafts are
// confirmed (a scripted model that repeats its prompt, a draft model that
// agrees) or rejected (random weights), in every weight format, chunked,
// preempted, capped by max_tokens and by the context; confirmed drafts give
// several tokens a step.
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/engine.h"
#include "io/hf_config.h"
#include "model/test_model.h"
#include "runtime/prediction.h"
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

// The tiny shapes with 512 ids (eos 7), random weights: draws cheap under the
// sanitizers, and ids that recur. Returns its config.
Qwen3Config write_random_model(const std::string& dir, uint64_t seed) {
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 512;
  config.eos_token_ids = {7};
  write_test_model(dir, config, DType::BF16, seed);
  return config;
}

// n ids spaced apart, then kEos: a chain for write_chain_model.
std::vector<int32_t> chain_of(int32_t n) {
  std::vector<int32_t> chain;
  for (int32_t k = 0; k < n; ++k) chain.push_back(100 + 37 * k);
  chain.push_back(kEos);
  return chain;
}

// The tiny shapes with 2048 ids, weights that continue `chain` (ending in kEos).
void write_chain_model(const std::string& dir, const std::vector<int32_t>& chain) {
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 2048;  // cheap draws under the sanitizers
  config.eos_token_ids = {kEos};
  write_scripted_test_model(dir, config, DType::BF16, chain);
}

}  // namespace

// A scripted model continues its chain whatever came before, so a prompt
// holding the chain and then its start again is continued as it was written
// there: the drafts copied from the prompt are confirmed.
TEST(Speculation, ConfirmedDraftsGiveSeveralTokensAStepAndTheSameIds) {
  test::ScratchDir dir("speculation-scripted");
  const std::vector<int32_t> chain = chain_of(40);
  write_chain_model(dir.path(), chain);
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

// A hunt finding: confirmed draft ids after the one that ended the answer (a
// stop string, here the callback) counted as accepted: more than the answer
// had.
TEST(Speculation, OnlyConfirmedIdsTheAnswerKeptCountAsAccepted) {
  test::ScratchDir dir("speculation-stopped");
  const std::vector<int32_t> chain = chain_of(20);
  write_chain_model(dir.path(), chain);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(1);
  Engine engine(*model, pool, with_drafts({16, 0, 512, 1}, {4, 1, 4}));
  std::vector<int32_t> prompt(chain.begin(), chain.begin() + 10);
  prompt.insert(prompt.end(), chain.begin(), chain.begin() + 3);  // the chain again: drafts by prompt lookup
  GenerationOptions o;
  o.max_new_tokens = 20;
  o.eos_ids = {kEos};
  o.sampling.temperature = 0;
  int tokens = 0;
  const int64_t h = engine.add(prompt, o, [&](int32_t, const TokenLogprobs*) { return ++tokens < 3; });
  while (engine.step()) {
  }
  EXPECT_EQ(engine.result(h).ids, std::vector<int32_t>(chain.begin() + 3, chain.begin() + 6));
  EXPECT_GT(engine.draft_stats().drafted, 0);
  EXPECT_LE(engine.draft_stats().accepted, 2) << "the first id came from the prompt's step";
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

namespace {

// p_min 0: a random model's drafts are unsure, and would be cut short.
EngineOptions with_draft_model(EngineOptions o, const Qwen3Model& draft, int32_t tokens, float p_min = 0) {
  o.draft_model = &draft;
  o.draft_tokens = tokens;
  o.draft_p_min = p_min;
  return o;
}

}  // namespace

// A draft model that predicts the model exactly (here: itself, in a pool of
// its own) has every draft confirmed, through chunked prompts and prompts
// taken from the prefix cache (which it catches up on first): several tokens
// a step, the same ids, reasons and log-probabilities.
TEST(Speculation, ADraftModelThatAgreesGivesSeveralTokensAStepAndTheSameIds) {
  test::ScratchDir dir("speculation-draft-model");
  std::vector<int32_t> chain;
  for (int32_t k = 0; k < 60; ++k) chain.push_back(100 + 29 * k);
  chain.push_back(kEos);
  write_chain_model(dir.path(), chain);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(2);

  std::vector<Req> reqs(4);
  for (size_t i = 0; i < reqs.size(); ++i) {
    Req& r = reqs[i];
    r.prompt.assign(chain.begin(), chain.begin() + 20);  // one prompt: the later ones start from the prefix cache
    r.opts.max_new_tokens = 30 + static_cast<int64_t>(i);
    r.opts.eos_ids = {kEos};
    r.opts.sampling.temperature = 0;
  }
  reqs[1].opts.sampling.temperature = 0.7f;  // a sampled request keeps its draws
  reqs[1].opts.sampling.seed = 5;
  reqs[1].opts.logprobs = 2;
  reqs[2].opts.max_new_tokens = 3;

  const EngineOptions one_at_a_time{16, 0, 512, 1}, chunked{4, 0, 8, 16};
  for (const EngineOptions& o : {one_at_a_time, chunked}) {
    const Outcome plain = run(*model, pool, o, reqs);
    const Outcome drafted = run(*model, pool, with_draft_model(o, *model, 4, 0.75f), reqs);  // a sure draft model
    expect_same_results(drafted, plain, o.max_running == 1 ? "one at a time" : "chunked");
    EXPECT_EQ(plain.results[0].ids, std::vector<int32_t>(chain.begin() + 20, chain.begin() + 50));
    EXPECT_GT(drafted.drafts.accepted, 40) << "many tokens came from confirmed drafts (chunked: one draft a step fits)";
    if (o.max_running == 1) {
      EXPECT_EQ(drafted.drafts.accepted, drafted.drafts.drafted) << "greedy requests confirm every draft id";
      EXPECT_LT(drafted.steps * 2, plain.steps) << "a confirmed draft of 4 gives 5 tokens a step";
    }
  }
}

// A draft model of other random weights (and another shape) is rarely right:
// its rejected drafts leave every request as it was, in every weight format,
// chunked and preempted, capped by the context, with drafts from a
// prediction beside its own.
TEST(Speculation, ADraftModelThatDisagreesChangesNothing) {
  test::ScratchDir dir("speculation-draft-model-random");
  Qwen3Config small = write_random_model(dir.file("model"), 5);
  small.num_hidden_layers = 1;
  small.hidden_size = 32;
  small.intermediate_size = 64;
  small.head_dim = 16;
  write_test_model(dir.file("draft"), small, DType::BF16, 6);
  auto draft = Qwen3Model::load(dir.file("draft"));

  std::vector<Req> reqs;
  for (int i = 0; i < 6; ++i) {
    Req r;
    for (int t = 0; t < 12 + 3 * i; ++t) r.prompt.push_back(17 * ((t * (i + 2)) % (3 + i)));
    r.opts.max_new_tokens = 10 + 2 * i;
    r.opts.ignore_eos = true;
    r.opts.sampling.temperature = i % 2 ? 0.9f : 0.0f;
    r.opts.sampling.seed = 11 + static_cast<uint64_t>(i);
    if (i == 3) r.opts.sampling.repetition_penalty = 1.3f;
    r.opts.logprobs = i % 3 == 0 ? 3 : -1;
    reqs.push_back(std::move(r));
  }
  reqs.push_back(reqs[4]);  // its prompt from the prefix cache
  reqs[2].opts.prediction = std::make_shared<const Prediction>(std::vector<int32_t>{17, 34, 51, 0, 17, 34, 51});

  ThreadPool pool(2);
  for (const std::optional<WeightFormat> weights :
       {std::optional<WeightFormat>(), std::optional(WeightFormat::Q8), std::optional(WeightFormat::Q4)}) {
    LoadOptions lo;
    lo.weights = weights;
    auto model = Qwen3Model::load(dir.file("model"), lo);
    EngineOptions capped{16, 0, 512, 16};
    capped.context = 40;
    for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 9, 8, 8}, capped}) {
      const Outcome plain = run(*model, pool, o, reqs);
      const Outcome drafted = run(*model, pool, with_draft_model(o, *draft, 3), reqs);
      SCOPED_TRACE(weights ? weight_format_name(*weights) : "stored");
      const char* what = o.kv_blocks ? "chunked, preempted" : o.context ? "context 40" : "together";
      expect_same_results(drafted, plain, what);
      EXPECT_GT(drafted.drafts.drafted, 20);
      // Drafts cut where the draft model is unsure (p_min): rows leave the step.
      const Outcome sure = run(*model, pool, with_draft_model(o, *draft, 3, 0.01f), reqs);
      expect_same_results(sure, plain, what);
      EXPECT_LT(sure.drafts.drafted, drafted.drafts.drafted) << what;
    }
  }
}

// The model as its own draft model predicts each greedy draw exactly (a
// row's logits do not depend on the batch), where its keys and values are
// those of the right ids at the right positions: through chunked prompts,
// preemptions (its pool recomputed too) and prompts from the prefix cache,
// every draft id is confirmed. (A random model's argmax hardly depends on
// positions: a draft id one position off is caught about once in a hundred.)
TEST(Speculation, TheModelAsItsOwnDraftModelHasEveryGreedyDraftConfirmed) {
  test::ScratchDir dir("speculation-self-draft");
  write_random_model(dir.path(), 5);
  std::vector<Req> reqs;
  for (int i = 0; i < 16; ++i) {
    Req r;
    for (int t = 0; t < 5 + i; ++t) r.prompt.push_back((37 * t * (i + 1) + i) % 512);
    r.opts.max_new_tokens = 40;
    r.opts.ignore_eos = true;
    r.opts.sampling.temperature = 0;
    reqs.push_back(std::move(r));
  }
  reqs[15] = reqs[14];  // from the prefix cache
  ThreadPool pool(2);
  for (const std::optional<WeightFormat> weights : {std::optional<WeightFormat>(), std::optional(WeightFormat::Q8)}) {
    LoadOptions lo;
    lo.weights = weights;
    auto model = Qwen3Model::load(dir.path(), lo);
    for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 40, 8, 8}}) {
      SCOPED_TRACE(weights ? weight_format_name(*weights) : "stored");
      const char* what = o.kv_blocks ? "chunked, preempted" : "together";
      const Outcome self = run(*model, pool, with_draft_model(o, *model, 4), reqs);
      expect_same_results(self, run(*model, pool, o, reqs), what);
      EXPECT_GT(self.drafts.drafted, o.kv_blocks ? 60 : 200) << what;  // chunked: a step of 8 rows takes one draft
      EXPECT_EQ(self.drafts.accepted, self.drafts.drafted) << what;
    }
  }
}

// A prompt from the prefix cache: the draft model skips the blocks it
// computed for the earlier request (while their contents stand), and drafts
// as well from them.
TEST(Speculation, ADraftModelSkipsThePromptBlocksItHoldsFromThePrefixCache) {
  test::ScratchDir dir("speculation-draft-prefix");
  write_random_model(dir.path(), 5);
  auto model = Qwen3Model::load(dir.path());
  Req a, b;
  for (int t = 0; t < 70; ++t) {
    a.prompt.push_back((37 * t + 3) % 512);
    b.prompt.push_back((41 * t + 5) % 512);
  }
  for (Req* r : {&a, &b}) {
    r->opts.max_new_tokens = 20;
    r->opts.ignore_eos = true;
    r->opts.sampling.temperature = 0;
  }
  ThreadPool pool(2);
  const EngineOptions o = with_draft_model({16, 0, 512, 1}, *model, 4);  // one at a time: a's blocks are cached
  const Outcome same = run(*model, pool, o, {a, a}), other = run(*model, pool, o, {a, b});
  expect_same_results(same, run(*model, pool, {16, 0, 512, 1}, {a, a}), "the same prompt twice");
  EXPECT_EQ(same.drafts.accepted, same.drafts.drafted) << "the blocks it skipped hold the right keys and values";
  EXPECT_EQ(other.drafts.model_rows - same.drafts.model_rows, 64) << "4 full blocks of the second prompt skipped";
}

namespace {

// Requests arriving over the steps, beside embedding and scoring requests;
// some stop by their callback.
struct Arrival {
  Req req;
  enum class Kind { Generate, Embed, Score } kind = Kind::Generate;
  int step = 0;         // added before this step
  int stop_after = -1;  // its callback stops it after this many tokens
};

struct Traffic {
  std::vector<GenerationResult> results;
  std::vector<std::vector<float>> outputs;
  Engine::DraftStats drafts;
};

Traffic drive(const Qwen3Model& model, ThreadPool& pool, const EngineOptions& o, const std::vector<Arrival>& in) {
  Engine engine(model, pool, o);
  std::vector<int64_t> handles(in.size(), -1);
  std::vector<int> seen(in.size(), 0);
  for (int step = 0;; ++step) {
    bool waiting = false;
    for (size_t i = 0; i < in.size(); ++i) {
      const Arrival& a = in[i];
      waiting |= a.step > step;
      if (handles[i] >= 0 || a.step > step) continue;
      if (a.kind == Arrival::Kind::Embed) {
        handles[i] = engine.add_embedding(a.req.prompt);
      } else if (a.kind == Arrival::Kind::Score) {
        handles[i] = engine.add_scoring(a.req.prompt, {1, 2, 3});
      } else {
        handles[i] = engine.add(
            a.req.prompt, a.req.opts,
            [&seen, i, stop = a.stop_after](int32_t, const TokenLogprobs*) { return stop < 0 || ++seen[i] < stop; });
      }
    }
    if (!engine.step() && !waiting) break;
  }
  Traffic t;
  for (int64_t h : handles) {
    t.results.push_back(engine.result(h));
    const std::span<const float> out = engine.output(h);
    t.outputs.emplace_back(out.begin(), out.end());
  }
  t.drafts = engine.draft_stats();
  EXPECT_EQ(engine.blocks().used_blocks(), 0);
  return t;
}

}  // namespace

// Traffic as a server sees it, the model as its own draft model: requests
// arriving while others decode, many prompts from the prefix cache (shared
// prefixes), embedding and scoring requests in the same steps, prompt
// log-probabilities, callbacks that stop a request, preemption: every result
// as without drafts, every greedy draft confirmed.
TEST(Speculation, ADraftModelAmidMixedTrafficChangesNothing) {
  test::ScratchDir dir("speculation-draft-traffic");
  write_random_model(dir.path(), 5);
  auto model = Qwen3Model::load(dir.path());
  std::vector<int32_t> shared;
  for (int t = 0; t < 45; ++t) shared.push_back((53 * t + 11) % 512);
  std::vector<Arrival> in(16);
  for (int i = 0; i < 16; ++i) {
    Arrival& a = in[static_cast<size_t>(i)];
    a.req.prompt.assign(shared.begin(), shared.begin() + 5 + (i * 7) % 41);
    if (i % 3 == 1) a.req.prompt.push_back(100 + i);
    a.req.opts.max_new_tokens = 10 + (i * 5) % 30;
    a.req.opts.ignore_eos = true;
    a.req.opts.sampling.temperature = 0;
    a.step = i / 4 * 6;
    if (i % 7 == 3) a.stop_after = 5;
  }
  in[9].kind = Arrival::Kind::Embed;
  in[13].kind = Arrival::Kind::Score;
  in[10].req.opts.prompt_logprobs = 2;
  in[11].req.opts.logprobs = 3;
  ThreadPool pool(2);
  for (const EngineOptions& o :
       {EngineOptions{4, 30, 8, 8}, EngineOptions{2, 70, 5, 6}, EngineOptions{16, 0, 512, 16}}) {
    SCOPED_TRACE(testing::Message() << "block size " << o.block_size << ", " << o.kv_blocks << " blocks");
    const Traffic plain = drive(*model, pool, o, in);
    for (const float p_min : {0.0f, 0.3f}) {  // 0.3: a random model's drafts are all cut (none run)
      const Traffic drafted = drive(*model, pool, with_draft_model(o, *model, 4, p_min), in);
      for (size_t i = 0; i < in.size(); ++i) {
        EXPECT_EQ(drafted.results[i].ids, plain.results[i].ids) << i;
        EXPECT_EQ(drafted.results[i].reason, plain.results[i].reason) << i;
        EXPECT_EQ(drafted.outputs[i], plain.outputs[i]) << i;
        ASSERT_EQ(drafted.results[i].prompt_logprobs.size(), plain.results[i].prompt_logprobs.size()) << i;
        for (size_t t = 0; t < plain.results[i].prompt_logprobs.size(); ++t)
          EXPECT_EQ(drafted.results[i].prompt_logprobs[t].logprob, plain.results[i].prompt_logprobs[t].logprob);
      }
      EXPECT_EQ(drafted.drafts.accepted, drafted.drafts.drafted);
      if (p_min == 0) {
        EXPECT_GT(drafted.drafts.drafted, 10);
      }
    }
  }
}

// Named LoRA adapters change the model's rows, not the draft model's (it has
// none): their requests' results stay those without drafts.
TEST(Speculation, ADraftModelBesideNamedAdaptersChangesNothing) {
  const std::string tiny = test::data_path("models/tiny");
  const Qwen3Config config = load_qwen3_config(tiny + "/config.json");
  test::ScratchDir dir("speculation-draft-lora");
  write_test_lora_adapter(dir.file("a"), config, {}, 11);
  LoadOptions named;
  named.lora_modules = {{"a", dir.file("a")}};
  auto model = Qwen3Model::load(tiny, named);
  std::vector<Req> reqs(4);
  for (int i = 0; i < 4; ++i) {
    Req& r = reqs[static_cast<size_t>(i)];
    for (int t = 0; t < 20; ++t) r.prompt.push_back((31 * t + 7) % 1000);
    r.opts.max_new_tokens = 12;
    r.opts.ignore_eos = true;
    r.opts.sampling.temperature = i % 2 ? 0.8f : 0;
    r.opts.sampling.seed = static_cast<uint64_t>(i);
    r.opts.adapter = i < 2 ? -1 : 0;
  }
  ThreadPool pool(2);
  const EngineOptions o{4, 0, 16, 8};
  expect_same_results(run(*model, pool, with_draft_model(o, *model, 4), reqs), run(*model, pool, o, reqs), "adapters");
}

// A step that failed after the draft model ran (a callback threw) leaves
// sequences whose drafts it computed: the next steps go on from them.
TEST(Speculation, ADraftModelGoesOnAfterAStepThatThrew) {
  test::ScratchDir dir("speculation-draft-throw");
  write_random_model(dir.path(), 5);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(2);
  std::vector<std::vector<int32_t>> ids;
  for (const bool drafts : {false, true}) {
    EngineOptions o{16, 0, 512, 4};
    if (drafts) o = with_draft_model(o, *model, 4);
    Engine engine(*model, pool, o);
    GenerationOptions g;
    g.max_new_tokens = 30;
    g.ignore_eos = true;
    g.sampling.temperature = 0;
    int n = 0;
    engine.add(std::vector<int32_t>{1, 2, 3, 4, 5}, g, [&](int32_t, const TokenLogprobs*) {
      if (++n == 6) throw std::runtime_error("the callback failed");
      return true;
    });
    const int64_t second = engine.add(std::vector<int32_t>{9, 8, 7, 6, 5, 4}, g);
    int thrown = 0;
    for (int step = 0; step < 200; ++step) {
      try {
        if (!engine.step()) break;
      } catch (const std::runtime_error&) {
        ++thrown;
      }
    }
    EXPECT_EQ(thrown, 1);
    ASSERT_TRUE(engine.finished(second));
    ids.push_back(engine.result(second).ids);
  }
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[0].size(), 30u);
}

// A draft model unsure of every id (a random one, p_min 0.3: each draft cut
// to nothing) rests for longer and longer between tries: few of its passes
// run (each catches up on the ids since the last), the result unchanged.
TEST(Speculation, AnUnsureDraftModelRests) {
  test::ScratchDir dir("speculation-draft-rest");
  write_random_model(dir.file("model"), 5);
  write_random_model(dir.file("draft"), 6);
  auto model = Qwen3Model::load(dir.file("model"));
  auto draft = Qwen3Model::load(dir.file("draft"));
  Req r;
  r.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  r.opts.max_new_tokens = 120;
  r.opts.ignore_eos = true;
  r.opts.sampling.temperature = 0;
  ThreadPool pool(1);
  const Outcome unsure = run(*model, pool, with_draft_model({}, *draft, 4, 0.3f), {r});
  expect_same_results(unsure, run(*model, pool, {}, {r}), "unsure");
  EXPECT_EQ(unsure.drafts.drafted, 0);
  // The prompt, then tries after 1, 2, 4, 8, 16, 16, ... steps: about 12 in 120.
  EXPECT_LE(unsure.drafts.model_passes, 16);
  EXPECT_LT(unsure.drafts.model_rows, 8 + 120 + 4);
  const Outcome sure = run(*model, pool, with_draft_model({}, *draft, 4, 0.0f), {r});
  EXPECT_GT(sure.drafts.model_passes, 50) << "without the cut it drafts every step";
}

TEST(Speculation, ADraftModelOfAnotherVocabularyOrAShorterContextIsRefused) {
  test::ScratchDir dir("speculation-draft-model-refused");
  const Qwen3Config config = write_random_model(dir.file("model"), 1);
  Qwen3Config other = config;
  other.vocab_size = 640;
  write_test_model(dir.file("vocab"), other, DType::BF16, 2);
  other = config;
  other.max_position_embeddings = 64;
  write_test_model(dir.file("short"), other, DType::BF16, 3);
  auto model = Qwen3Model::load(dir.file("model"));
  auto vocab = Qwen3Model::load(dir.file("vocab"));
  auto short_context = Qwen3Model::load(dir.file("short"));
  ThreadPool pool(1);
  const auto error = [&](const EngineOptions& o) {
    try {
      Engine engine(*model, pool, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(with_draft_model({}, *vocab, 4)).find("vocabulary has 640 ids, the model's 512"), std::string::npos);
  EngineOptions o = with_draft_model({}, *short_context, 4);
  EXPECT_NE(error(o).find("draft model's context is 64 positions"), std::string::npos);
  o.context = 64;
  EXPECT_EQ(error(o), "no error");
  EXPECT_NE(error(with_draft_model({}, *model, 0)).find("at least 1 draft token"), std::string::npos);
  EXPECT_NE(error(with_draft_model({}, *model, 4, 1.5f)).find("between 0 and 1, got 1.5"), std::string::npos);
}
