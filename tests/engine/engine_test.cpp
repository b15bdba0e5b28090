// The engine against Session::generate: every request's ids equal its solo
// run, greedy and seeded sampling, at any parallelism, with a token budget
// small enough to chunk every prompt, and with a KV pool so small that
// sequences are preempted; cancellation frees everything.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "hidden_state.h"
#include "model/quality.h"
#include "model/test_model.h"
#include "runtime/model_bundle.h"
#include "test_request.h"
#include "test_util.h"
#include "text/grammar/json_grammar.h"
#include "util/error.h"

using namespace qinfer;
using namespace qinfer::engine;

using test::Req;

namespace {

std::vector<Req> requests() {
  std::vector<Req> reqs;
  for (int i = 0; i < 7; ++i) {
    Req r;
    for (int t = 0; t < 3 + 5 * (i % 4); ++t) r.prompt.push_back((t * 7919 + 977 * i + 13) % 151000);
    if (i % 3 == 0) r.prompt = {785, 6722, 315, 9625, 374};  // a shared prompt (prefix cache)
    r.opts.max_new_tokens = 6 + i % 5;
    r.opts.ignore_eos = true;
    if (i % 2) {
      r.opts.sampling.temperature = 0.8f;
      r.opts.sampling.top_k = 40;
      r.opts.sampling.seed = 100 + static_cast<uint64_t>(i);
    } else {
      r.opts.sampling.temperature = 0.0f;
    }
    reqs.push_back(std::move(r));
  }
  return reqs;
}

// Each request's ids generated alone, by Session.
std::vector<std::vector<int32_t>> solo_ids(const Qwen3Model& model, const std::vector<Req>& reqs, ThreadPool& pool) {
  std::vector<std::vector<int32_t>> solo;
  for (const Req& r : reqs) {
    Session s(model, pool);
    solo.push_back(s.generate(r.prompt, r.opts, {}).ids);
  }
  return solo;
}

// The requests' results from one engine, all added before it runs.
std::vector<GenerationResult> run_together(const Qwen3Model& model, ThreadPool& pool, const std::vector<Req>& reqs,
                                           const EngineOptions& o) {
  Engine engine(model, pool, o);
  std::vector<int64_t> handles;
  for (const Req& r : reqs) handles.push_back(engine.add(r.prompt, r.opts));
  engine.run_until_idle();
  std::vector<GenerationResult> out;
  for (int64_t h : handles) out.push_back(engine.result(h));
  return out;
}

class EngineTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineTest, EveryRequestGetsTheIdsOfItsSoloRun) {
  LoadOptions lo;
  if (std::string(GetParam()) == "q4") lo.weights = WeightFormat::Q4;
  if (std::string(GetParam()) == "bf16_products") {  // --fast-prefill
    lo.weights = WeightFormat::BF16;
    lo.bf16_products = true;
  }
  auto model = Qwen3Model::load(test::data_path("models/tiny"), lo);
  ThreadPool pool(2);
  const std::vector<Req> reqs = requests();
  const std::vector<std::vector<int32_t>> solo = solo_ids(*model, reqs, pool);
  struct Config {
    EngineOptions o;
    const char* what;
  };
  const Config configs[] = {
      {{16, 0, 512, 1}, "one at a time"},
      {{16, 0, 512, 16}, "all together"},
      {{4, 0, 5, 4}, "chunks of at most 5 tokens, 4 running"},
      {{4, 9, 64, 8}, "9 blocks of 4: preemption"},
  };
  for (const Config& c : configs) {
    Engine engine(*model, pool, c.o);
    std::vector<int64_t> handles;
    for (size_t i = 0; i < reqs.size(); ++i) {
      handles.push_back(engine.add(reqs[i].prompt, reqs[i].opts));
      if (i == 3) engine.step();  // later requests arrive mid-flight
    }
    engine.run_until_idle();
    for (size_t i = 0; i < reqs.size(); ++i) {
      ASSERT_TRUE(engine.finished(handles[i])) << c.what;
      EXPECT_EQ(engine.result(handles[i]).ids, solo[i]) << c.what << ": request " << i;
      EXPECT_EQ(engine.result(handles[i]).reason, StopReason::MaxTokens) << c.what;
    }
    EXPECT_EQ(engine.blocks().used_blocks(), 0) << c.what;
    if (c.o.block_size == 4) {  // the shared prompt's full block
      EXPECT_GT(engine.blocks().prefix_hits(), 0) << c.what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, EngineTest, ::testing::Values("stored", "q4", "bf16_products"));

// Thousands of short random requests through a tiny KV pool (forcing
// preemption), some sharing a prefix, arriving at random and some cancelled at
// random steps: the pool is all free at idle and every request that was not
// cancelled ends with the ids of its solo run. A 512-token vocabulary keeps a
// step cheap enough to run thousands under the sanitizers. Run with and
// without speculative decoding (drafts of up to 3 ids, often rejected).
class EngineStress : public ::testing::TestWithParam<int32_t> {};

TEST_P(EngineStress, ThousandsOfRandomRequestsWithCancellationsUnderPreemption) {
  test::ScratchDir dir("engine-stress");
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 512;
  config.eos_token_ids = {7};
  write_test_model(dir.path(), config, DType::BF16, 5);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(1);  // the engine's logic under test; one thread keeps it fast on a loaded machine
  std::mt19937 rng(42);
  std::vector<std::vector<int32_t>> prefixes(4);
  for (auto& p : prefixes)
    for (size_t t = 0; t < 4 + rng() % 6; ++t) p.push_back(static_cast<int32_t>(rng() % 512));
  struct Item {
    std::vector<int32_t> prompt;
    GenerationOptions opts;
    int64_t handle = -1;
    int64_t cancel_at = -1;  // step at which it is cancelled, -1: never
  };
  std::vector<Item> items(GetParam() > 0 ? 700 : 2000);  // with drafts: a third, for the sanitizers' time
  for (Item& it : items) {
    if (rng() % 3 == 0) it.prompt = prefixes[rng() % prefixes.size()];
    const size_t len = 1 + rng() % 6;
    for (size_t t = 0; t < len; ++t) it.prompt.push_back(static_cast<int32_t>(rng() % 512));
    it.opts.max_new_tokens = 1 + static_cast<int64_t>(rng() % 12);
    it.opts.ignore_eos = rng() % 4 != 0;
    it.opts.sampling.temperature = rng() % 2 ? 0.0f : 0.9f;
    it.opts.sampling.seed = rng();
    if (rng() % 4 == 0) it.cancel_at = -2;  // cancelled a few steps after it arrives
  }
  EngineOptions eo{4, 7, 12, 6};  // 7 blocks of 4 positions; a request needs up to 7
  eo.draft_tokens = GetParam();
  Engine engine(*model, pool, eo);
  int64_t step = 0;
  size_t next = 0;
  while (next < items.size() || !engine.scheduler().idle()) {
    for (size_t k = rng() % 4; k > 0 && next < items.size(); --k, ++next) {
      Item& it = items[next];
      it.handle = engine.add(it.prompt, it.opts);
      if (it.cancel_at == -2) it.cancel_at = step + static_cast<int64_t>(rng() % 24);
    }
    for (Item& it : items)
      if (it.cancel_at == step && it.handle >= 0) engine.cancel(it.handle);
    engine.step();
    ++step;
  }
  EXPECT_EQ(engine.blocks().used_blocks(), 0);
  EXPECT_GT(engine.blocks().prefix_hits(), 0);
  EXPECT_GT(engine.scheduler().preemptions(), 0);
  size_t compared = 0, cancelled = 0;
  for (const Item& it : items) {
    ASSERT_TRUE(engine.finished(it.handle));
    if (engine.result(it.handle).reason == StopReason::Callback) {  // cancelled before it ended
      ++cancelled;
      continue;
    }
    Session solo(*model, pool);
    ASSERT_EQ(engine.result(it.handle).ids, solo.generate(it.prompt, it.opts, {}).ids) << "request " << it.handle;
    ++compared;
  }
  EXPECT_GT(cancelled, items.size() / 20);
  EXPECT_GT(compared, items.size() / 2);
  if (GetParam() > 0) {
    EXPECT_GT(engine.draft_stats().accepted, 0);
    EXPECT_GT(engine.draft_stats().drafted, engine.draft_stats().accepted);
  }
}

INSTANTIATE_TEST_SUITE_P(DraftTokens, EngineStress, ::testing::Values(0, 3));

TEST(Engine, CancelAndCallbackStopFreeTheirBlocks) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  Engine engine(*model, pool, {4, 0, 8, 4});
  GenerationOptions opts;
  opts.max_new_tokens = 50;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374, 11, 12, 13, 14, 15};
  const int64_t a = engine.add(prompt, opts);
  int seen = 0;
  const int64_t b = engine.add(prompt, opts, [&](int32_t, const TokenLogprobs*) { return ++seen < 3; });
  engine.step();
  engine.step();
  engine.cancel(a);
  engine.run_until_idle();
  EXPECT_TRUE(engine.finished(a));
  EXPECT_EQ(engine.result(a).reason, StopReason::Callback);
  EXPECT_EQ(engine.result(b).ids.size(), 3u);
  EXPECT_EQ(engine.blocks().used_blocks(), 0);
  EXPECT_THROW(engine.add({}, opts), Error);
  EXPECT_THROW(engine.add(std::vector<int32_t>{-1}, opts), Error);
}

TEST(Engine, MaxContextCapsEverySequence) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  EngineOptions eo;
  eo.context = 12;
  Engine engine(*model, pool, eo);
  EXPECT_EQ(engine.context(), 12);
  EXPECT_EQ(engine.blocks().n_blocks() * engine.blocks().block_size(), 16 * eo.max_running) << "KV sized by the cap";
  GenerationOptions opts;
  opts.max_new_tokens = 50;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374};
  const int64_t h = engine.add(prompt, opts);
  engine.run_until_idle();
  EXPECT_EQ(engine.result(h).reason, StopReason::ContextFull);
  // A hunt finding: the last token (which needs no position of its own) made
  // prompt + completion one more than the context, against what the server
  // checks max_tokens by and reports as max_model_len.
  EXPECT_EQ(engine.result(h).ids.size(), 12u - prompt.size()) << "prompt + completion = the context";
  EXPECT_THROW(engine.add(std::vector<int32_t>(12, 1), opts), Error);
}

// A hunt finding: with a pool smaller than one full context, a sequence that
// outgrew it alone was preempted, could not come back, and the step threw,
// ending every request in flight. The pool now caps the context.
TEST(Engine, APoolSmallerThanTheContextCapsIt) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  EngineOptions eo;
  eo.context = 2048;
  eo.kv_blocks = 4;
  eo.block_size = 16;
  eo.max_running = 2;
  Engine engine(*model, pool, eo);
  EXPECT_EQ(engine.context(), 64);
  GenerationOptions opts;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  opts.max_new_tokens = 500;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374};
  const int64_t long_one = engine.add(prompt, opts);
  opts.max_new_tokens = 40;
  const std::vector<int32_t> other_prompt = {9707, 11, 1879};
  const int64_t other = engine.add(other_prompt, opts);
  engine.run_until_idle();
  EXPECT_EQ(engine.result(long_one).reason, StopReason::ContextFull);
  EXPECT_EQ(engine.result(other).reason, StopReason::MaxTokens);
  EXPECT_EQ(engine.result(other).ids.size(), 40u);
  EXPECT_GT(engine.scheduler().preemptions(), 0) << "the two did not fit together: one waited for the other";
  EXPECT_THROW(engine.add(std::vector<int32_t>(64, 1), opts), Error) << "a prompt the pool cannot hold";
  eo.kv_blocks = (1 << 24) + 1;
  EXPECT_THROW(Engine(*model, pool, eo), Error) << "the block tables alone would take a gigabyte";
}

// Hunt findings: the default pool was max_running full contexts, committed
// as first used and kept for the prefix cache, so a server's memory grew with
// every distinct token until that (140 GiB for Qwen3-0.6B's 16 x 40960 f32
// positions) was reached; and sizes that wrapped the pool's byte count mapped
// nothing, then wrote through a null pointer.
TEST(Engine, TheDefaultPoolFitsTheMemoryItMayTakeAndHugeSizesAreRefused) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineOptions eo;  // 16 full contexts of 40960 positions
  const int64_t block_bytes = kv_block_bytes(*model, eo.block_size);
  EXPECT_EQ(block_bytes, 2 * 2 * 2 * 32 * 16 * 4) << "keys and values, 2 layers, 2 KV heads of 32, f32";
  eo.kv_memory_limit = 100 * block_bytes + block_bytes / 2;
  const Engine small(*model, pool, eo);
  EXPECT_EQ(small.blocks().n_blocks(), 100);
  EXPECT_EQ(small.context(), 100 * eo.block_size) << "the pool caps the context";
  eo.kv_memory_limit = int64_t{1} << 40;
  EXPECT_EQ(Engine(*model, pool, eo).blocks().n_blocks(), 16 * 40960 / eo.block_size) << "the limit only bounds";
  eo.kv_memory_limit = block_bytes - 1;
  EXPECT_THROW(Engine(*model, pool, eo), Error) << "no block fits";
  eo.kv_memory_limit = 0;
  eo.kv_blocks = 1 << 24;
  eo.block_size = 1 << 30;  // 2^24 blocks x 2^30 positions x 1 KiB: 2^64 bytes, wrapped to 0
  EXPECT_THROW(Engine(*model, pool, eo), Error);
}

TEST(Engine, KeepsPromptLogitsAndTimesEachRequest) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  Engine engine(*model, pool);
  GenerationOptions opts;
  opts.max_new_tokens = 4;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374};
  const int64_t without = engine.add(prompt, opts);
  opts.keep_prompt_logits = true;
  const int64_t with = engine.add(prompt, opts);
  engine.run_until_idle();
  EXPECT_TRUE(engine.prompt_logits(without).empty());
  Session solo(*model, pool);
  solo.generate(prompt, opts, {});
  const std::span<const float> got = engine.prompt_logits(with), want = solo.prompt_logits();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "bit-identical to Session's";
  EXPECT_GT(engine.result(with).prefill_s, 0);
  EXPECT_GT(engine.result(with).decode_s, 0);
}

}  // namespace

namespace {

TEST(Engine, RecordsEachTokensLogprobs) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  Engine engine(*model, pool);
  GenerationOptions opts;
  opts.max_new_tokens = 5;
  opts.ignore_eos = true;
  opts.sampling.temperature = 0;
  opts.logprobs = 4;
  opts.keep_prompt_logits = true;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374};
  std::vector<TokenLogprobs> seen;  // what the callback was handed, token by token
  const int64_t h = engine.add(prompt, opts, [&](int32_t id, const TokenLogprobs* logprobs) {
    if (!logprobs) {
      ADD_FAILURE() << "asked for, so handed to the callback";
      return true;
    }
    EXPECT_EQ(logprobs->id, id);
    seen.push_back(*logprobs);
    return true;
  });
  engine.run_until_idle();
  const GenerationResult& r = engine.result(h);
  ASSERT_EQ(r.logprobs.size(), r.ids.size());
  ASSERT_EQ(seen.size(), r.ids.size());
  for (size_t i = 0; i < r.ids.size(); ++i) {
    EXPECT_EQ(r.logprobs[i].id, r.ids[i]);
    ASSERT_EQ(r.logprobs[i].top.size(), 4u);
    EXPECT_EQ(r.logprobs[i].top[0].first, r.ids[i]) << "greedy takes the most probable";
    EXPECT_EQ(r.logprobs[i].top[0].second, r.logprobs[i].logprob);
    EXPECT_LE(r.logprobs[i].logprob, 0.0f);
    EXPECT_GE(r.logprobs[i].top[0].second, r.logprobs[i].top[3].second);
    EXPECT_EQ(seen[i].logprob, r.logprobs[i].logprob);
    EXPECT_EQ(seen[i].top, r.logprobs[i].top);
  }
  const TokenLogprobs first = token_logprobs(engine.prompt_logits(h), r.ids[0], 4);
  EXPECT_EQ(first.logprob, r.logprobs[0].logprob);
  opts.logprobs = -1;
  const int64_t none = engine.add(prompt, opts, [](int32_t, const TokenLogprobs* logprobs) {
    EXPECT_EQ(logprobs, nullptr) << "not asked for";
    return true;
  });
  engine.run_until_idle();
  EXPECT_TRUE(engine.result(none).logprobs.empty());
}

}  // namespace

// A request's log-probabilities are those of its tokens, and bit-identical
// whether it runs alone or among others.
TEST(Engine, LogprobsAreBatchInvariant) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  GenerationOptions o;
  o.max_new_tokens = 6;
  o.ignore_eos = true;
  o.sampling.temperature = 0;
  o.logprobs = 3;
  const std::vector<int32_t> prompt = {785, 6722, 315, 9625, 374};
  Engine alone(*model, pool, {4, 0, 64, 4});
  const int64_t h = alone.add(prompt, o);
  alone.run_until_idle();
  const GenerationResult solo = alone.result(h);
  ASSERT_EQ(solo.logprobs.size(), solo.ids.size());
  for (size_t i = 0; i < solo.ids.size(); ++i) {
    EXPECT_EQ(solo.logprobs[i].id, solo.ids[i]);
    ASSERT_EQ(solo.logprobs[i].top.size(), 3u);
    EXPECT_EQ(solo.logprobs[i].top[0].first, solo.ids[i]);  // greedy draws the most likely
    EXPECT_EQ(solo.logprobs[i].top[0].second, solo.logprobs[i].logprob);
    EXPECT_LE(solo.logprobs[i].top[1].second, solo.logprobs[i].top[0].second);
  }
  Engine crowd(*model, pool, {4, 0, 5, 4});
  GenerationOptions other = o;
  other.logprobs = -1;
  crowd.add(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}, other);
  const int64_t mine = crowd.add(prompt, o);
  crowd.add(std::vector<int32_t>{9, 8}, other);
  crowd.run_until_idle();
  const GenerationResult& r = crowd.result(mine);
  ASSERT_EQ(r.logprobs.size(), solo.logprobs.size());
  for (size_t i = 0; i < r.logprobs.size(); ++i) {
    EXPECT_EQ(std::memcmp(&r.logprobs[i].logprob, &solo.logprobs[i].logprob, sizeof(float)), 0);
    EXPECT_EQ(r.logprobs[i].top, solo.logprobs[i].top);
  }
  EXPECT_TRUE(crowd.result(0).logprobs.empty());
}

// Prompt log-probabilities are those of the prompt's teacher-forced logits,
// bit for bit, however the prompt is chunked, among other requests, after
// preemption, and when its prefix is cached; they reach the callback before
// the first token; max_new_tokens 0 gives them alone.
// Named LoRA adapters: requests naming different adapters (or none) share
// steps and the prefix cache, and each gets what an engine over the model
// loaded with its adapter alone gives it: the same ids, the same logprob
// bits. The shared prompt runs under all three, so a block computed under
// one adapter and found by another would show.
TEST(Engine, EachRequestRunsWithTheAdapterItNames) {
  const std::string tiny = test::data_path("models/tiny");
  const Qwen3Config config = load_qwen3_config(tiny + "/config.json");
  test::ScratchDir dir("engine-lora");
  write_test_lora_adapter(dir.file("a"), config, {}, 11);
  write_test_lora_adapter(dir.file("b"), config, {}, 12);
  LoadOptions named;
  named.lora_modules = {{"a", dir.file("a")}, {"b", dir.file("b")}};
  auto model = Qwen3Model::load(tiny, named);
  std::vector<Req> reqs = requests();
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].opts.adapter = static_cast<int32_t>(i % 3 == 0 ? i / 3 : i % 3) - 1;  // the shared prompt: -1, 0, 1
    reqs[i].opts.logprobs = 1;
  }
  ThreadPool pool(2);
  auto run = [&](Engine& engine, const std::vector<size_t>& which, int32_t adapter) {
    std::vector<int64_t> handles;
    for (size_t i : which) {
      GenerationOptions o = reqs[i].opts;
      o.adapter = adapter < -1 ? o.adapter : adapter;
      handles.push_back(engine.add(reqs[i].prompt, o));
    }
    engine.run_until_idle();
    std::vector<GenerationResult> out;
    for (int64_t h : handles) out.push_back(engine.result(h));
    return out;
  };
  std::vector<GenerationResult> want(reqs.size());
  for (int32_t adapter : {-1, 0, 1}) {
    LoadOptions alone;
    if (adapter >= 0) alone.lora_adapters = {dir.file(adapter == 0 ? "a" : "b")};
    auto reference = Qwen3Model::load(tiny, alone);
    Engine engine(*reference, pool, {16, 0, 512, 1});
    std::vector<size_t> mine;
    for (size_t i = 0; i < reqs.size(); ++i)
      if (reqs[i].opts.adapter == adapter) mine.push_back(i);
    const std::vector<GenerationResult> got = run(engine, mine, -1);
    for (size_t k = 0; k < mine.size(); ++k) want[mine[k]] = got[k];
  }
  EXPECT_NE(want[0].logprobs[0].logprob, want[3].logprobs[0].logprob) << "the adapters change the shared prompt's";
  EXPECT_NE(want[3].logprobs[0].logprob, want[6].logprobs[0].logprob);
  std::vector<size_t> all(reqs.size());
  std::iota(all.begin(), all.end(), 0);
  for (const EngineOptions& o :
       {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 0, 5, 4}, EngineOptions{4, 9, 64, 8}}) {
    Engine engine(*model, pool, o);
    for (int round = 0; round < 2; ++round) {  // the second finds the first's blocks cached
      const std::vector<GenerationResult> got = run(engine, all, -2);
      for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(got[i].ids, want[i].ids) << "request " << i << " block size " << o.block_size << " round " << round;
        ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size());
        for (size_t t = 0; t < got[i].logprobs.size(); ++t)
          EXPECT_EQ(std::memcmp(&got[i].logprobs[t].logprob, &want[i].logprobs[t].logprob, sizeof(float)), 0)
              << "request " << i << " token " << t << " round " << round;
      }
    }
  }
  Engine engine(*model, pool);
  GenerationOptions unknown;
  unknown.adapter = 2;
  EXPECT_THROW(engine.add(reqs[0].prompt, unknown), Error);
  PromptOnlyOptions unknown_embedding;
  unknown_embedding.adapter = -2;
  EXPECT_THROW(engine.add_embedding(reqs[0].prompt, unknown_embedding), Error);
  EXPECT_THROW(Session(*model, pool).generate(reqs[0].prompt, reqs[3].opts, {}), Error) << "a session has no adapters";
}

// vLLM's priority and cache_salt change which request runs first and which
// keys/values a request may take from the prefix cache, never an id: each
// request still gets its solo run's ids. One at a time, the requests finish
// in priority order (then arrival); a second round finds cached only the
// blocks its own salt computed.
TEST(Engine, PrioritiesAndCacheSaltsOrderAndPartitionWithoutChangingAnId) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  std::vector<Req> reqs = requests();
  const std::vector<std::vector<int32_t>> solo = solo_ids(*model, reqs, pool);
  const int32_t priority[] = {3, -2, 0, 1, 0, -7, 2};
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].opts.priority = priority[i];
    reqs[i].opts.cache_salt = i % 3 == 0 ? std::string(i == 0 ? "" : "tenant-") + std::to_string(i) : "";
  }
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 1}, EngineOptions{4, 0, 5, 4}, EngineOptions{4, 9, 64, 8}}) {
    Engine engine(*model, pool, o);
    for (int round = 0; round < 2; ++round) {
      std::vector<int64_t> handles;
      std::vector<size_t> finished;
      for (size_t i = 0; i < reqs.size(); ++i) handles.push_back(engine.add(reqs[i].prompt, reqs[i].opts));
      while (engine.step())
        for (size_t i = 0; i < reqs.size(); ++i)
          if (engine.finished(handles[i]) && std::find(finished.begin(), finished.end(), i) == finished.end())
            finished.push_back(i);
      for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(engine.result(handles[i]).ids, solo[i]) << "request " << i << " round " << round;
        // The shared prompt (requests 0, 3, 6) under three salts (none included): in the second round each finds
        // the block its own salt computed in the first, request 6 under a new salt none (a pool with room for
        // all: no preemption, no reclaiming).
        if (i % 3 == 0 && o.kv_blocks == 0) {
          EXPECT_EQ(engine.result(handles[i]).reused_tokens, round == 0 || o.block_size == 16 || i == 6 ? 0 : 4)
              << "request " << i << " round " << round << " block size " << o.block_size;
        }
      }
      reqs[6].opts.cache_salt = round == 0 ? "tenant-new" : "tenant-6";
      if (o.max_running == 1) {
        EXPECT_EQ(finished, (std::vector<size_t>{5, 1, 2, 4, 3, 6, 0})) << "round " << round;
      }
    }
  }

  // Embedding and scoring requests cache under their salt too: a review finding (they could not be salted, and
  // their prompts' blocks were any unsalted request's).
  Engine engine(*model, pool, {4, 0, 64, 4});
  const std::vector<int32_t> nine = {785, 6722, 315, 9625, 374, 11, 12, 13, 14};
  const int64_t embedded = engine.add_embedding(nine, {.cache_salt = "tenant-e"});
  const int64_t scored =
      engine.add_scoring(std::vector<int32_t>(nine.rbegin(), nine.rend()), {5}, {.cache_salt = "tenant-s"});
  engine.run_until_idle();
  ASSERT_TRUE(engine.finished(embedded) && engine.finished(scored));
  GenerationOptions one;
  one.max_new_tokens = 1;
  const auto reused = [&](const std::vector<int32_t>& prompt, const std::string& salt) {
    GenerationOptions o = one;
    o.cache_salt = salt;
    const int64_t h = engine.add(prompt, o);
    engine.run_until_idle();
    return engine.result(h).reused_tokens;
  };
  EXPECT_EQ(reused(nine, ""), 0);
  EXPECT_EQ(reused(nine, "tenant-s"), 0);
  EXPECT_EQ(reused(nine, "tenant-e"), 8);
  EXPECT_EQ(reused(std::vector<int32_t>(nine.rbegin(), nine.rend()), "tenant-s"), 8);

  // And by their priority, as vLLM's pooling requests: one at a time, the more urgent first (then arrival).
  Engine one_at_a_time(*model, pool, {4, 0, 64, 1});
  PromptOnlyOptions urgent, later;
  urgent.priority = -1;
  later.priority = 2;
  const std::vector<int64_t> handles = {one_at_a_time.add_embedding(nine, later), one_at_a_time.add(nine, one),
                                        one_at_a_time.add_scoring(nine, {5}, urgent),
                                        one_at_a_time.add_embedding(nine, urgent)};
  std::vector<size_t> finished;
  while (one_at_a_time.step())
    for (size_t i = 0; i < handles.size(); ++i)
      if (one_at_a_time.finished(handles[i]) && std::find(finished.begin(), finished.end(), i) == finished.end())
        finished.push_back(i);
  EXPECT_EQ(finished, (std::vector<size_t>{2, 3, 1, 0}));
}

TEST(Engine, PromptLogprobsAreThoseOfEveryPromptPosition) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  std::vector<int32_t> prompt;
  for (int t = 0; t < 100; ++t) prompt.push_back((t * 7919 + 13) % 151000);  // more than one 64-row chunk
  const std::vector<float> logits = teacher_forced_logits(*model, prompt, false, pool);
  const size_t V = static_cast<size_t>(model->config().vocab_size);
  std::vector<TokenLogprobs> want;
  for (size_t p = 0; p + 1 < prompt.size(); ++p)
    want.push_back(token_logprobs(std::span<const float>(logits).subspan(p * V, V), prompt[p + 1], 3));
  auto expect_want = [&](const std::vector<TokenLogprobs>& got, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t p = 0; p < want.size(); ++p) {
      EXPECT_EQ(got[p].id, prompt[p + 1]) << what;
      EXPECT_EQ(std::memcmp(&got[p].logprob, &want[p].logprob, sizeof(float)), 0) << what << " at " << p;
      EXPECT_EQ(got[p].top, want[p].top) << what << " at " << p;
    }
  };
  GenerationOptions o;
  o.max_new_tokens = 4;
  o.ignore_eos = true;
  o.sampling.temperature = 0;
  o.prompt_logprobs = 3;
  GenerationOptions plain = o;
  plain.prompt_logprobs = -1;
  struct Config {
    EngineOptions o;
    const char* what;
  };
  const Config configs[] = {
      {{16, 0, 512, 4}, "alone"},
      {{4, 0, 7, 4}, "chunks of at most 7 tokens among others"},
      {{4, 30, 16, 4}, "30 blocks of 4: preemption"},
  };
  for (const Config& c : configs) {
    Engine engine(*model, pool, c.o);
    // The same prompt computed first: its blocks are cached, and must not be used.
    const int64_t before = engine.add(prompt, plain);
    engine.run_until_idle();
    EXPECT_TRUE(engine.result(before).prompt_logprobs.empty()) << "not asked for";
    std::vector<TokenLogprobs> handed;
    size_t tokens_before_them = 0, tokens = 0;
    const int64_t other = engine.add(std::vector<int32_t>(prompt.begin() + 3, prompt.end()), plain);
    const int64_t h = engine.add(
        prompt, o,
        [&](int32_t, const TokenLogprobs*) {
          ++tokens;
          return true;
        },
        [&](std::span<const TokenLogprobs> l) {
          handed.assign(l.begin(), l.end());
          tokens_before_them = tokens;
        });
    GenerationOptions none = o;
    none.max_new_tokens = 0;
    const int64_t alone = engine.add(prompt, none);
    engine.run_until_idle();
    expect_want(engine.result(h).prompt_logprobs, c.what);
    expect_want(handed, c.what);
    EXPECT_EQ(tokens_before_them, 0u) << c.what;
    EXPECT_EQ(engine.result(h).ids, engine.result(before).ids) << c.what;
    EXPECT_EQ(engine.result(h).reused_tokens, 0) << c.what;
    EXPECT_EQ(engine.result(other).ids.size(), 4u) << c.what;
    expect_want(engine.result(alone).prompt_logprobs, c.what);
    EXPECT_TRUE(engine.result(alone).ids.empty()) << c.what;
    EXPECT_EQ(engine.result(alone).reason, StopReason::MaxTokens) << c.what;
    if (c.o.kv_blocks > 0) {
      EXPECT_GT(engine.scheduler().preemptions(), 0) << c.what;
    }
  }
}

// Constrained requests (response_format) get the ids of their solo runs among
// free ones, at any parallelism and under preemption.
TEST(Engine, ConstrainedRequestsAreBatchInvariant) {
  ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(2);
  auto spec = [&](grammar::Grammar g) {
    auto s = std::make_shared<OutputGrammar>();
    s->grammar = std::make_shared<const grammar::Grammar>(std::move(g));
    s->tokenizer = &*bundle.tokenizer;
    s->vocabulary = bundle.token_trie();
    return s;
  };
  const auto object = spec(grammar::json_object_grammar());
  const auto schema = spec(grammar::json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}}})")));
  std::vector<Req> reqs = requests();
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].opts.max_new_tokens = 12;
    reqs[i].opts.ignore_eos = i % 3 == 2;
    reqs[i].opts.eos_ids = bundle.eos_ids();
    if (i % 3 != 1) reqs[i].opts.grammar = i % 2 ? schema : object;
  }
  std::vector<GenerationResult> solo;
  for (const Req& r : reqs) {
    Session s(*bundle.model, pool);
    solo.push_back(s.generate(r.prompt, r.opts, {}));
  }
  EngineOptions drafting{16, 0, 512, 16};  // speculative decoding: a draft is drawn through the grammar too
  drafting.draft_tokens = 3;
  drafting.draft_min_ngram = 1;
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 9, 5, 8}, drafting}) {
    Engine engine(*bundle.model, pool, o);
    std::vector<int64_t> handles;
    for (const Req& r : reqs) handles.push_back(engine.add(r.prompt, r.opts));
    engine.run_until_idle();
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(engine.result(handles[i]).ids, solo[i].ids) << "request " << i;
      EXPECT_EQ(engine.result(handles[i]).reason, solo[i].reason) << "request " << i;
      if (!reqs[i].opts.grammar) continue;
      grammar::Matcher m(reqs[i].opts.grammar->grammar);
      std::string text;
      for (int32_t id : solo[i].ids)
        if (id != bundle.eos_ids().front()) text += bundle.tokenizer->token_bytes(id);
      EXPECT_TRUE(m.advance(text)) << "request " << i << ": " << text;
    }
    if (o.draft_tokens > 0) {
      EXPECT_GT(engine.draft_stats().drafted, 0);
    }
  }
}

// vLLM's stop_token_ids, min_tokens and allowed_token_ids: a stop id ends the
// output (kept in it, ignore_eos or not), none is drawn before min_tokens, only
// allowed ids are drawn; and each request's ids are those of its run alone,
// among others and with speculative decoding.
TEST(Engine, StopIdsMinTokensAndAllowedIdsAreFollowedAndBatchInvariant) {
  ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(2);
  auto run = [&](const std::vector<Req>& reqs, const EngineOptions& o) {
    return run_together(*bundle.model, pool, reqs, o);
  };
  std::vector<Req> free = requests();
  for (Req& r : free) {
    r.opts.max_new_tokens = 12;
    r.opts.eos_ids = bundle.eos_ids();
  }
  const std::vector<GenerationResult> unconstrained = run(free, EngineOptions{16, 0, 512, 16});
  std::vector<Req> reqs = free;
  const std::vector<int32_t> allowed = {11, 13, 220, 279, 315, 9625};
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::vector<int32_t>& ids = unconstrained[i].ids;
    ASSERT_GE(ids.size(), 4u);
    GenerationOptions& o = reqs[i].opts;
    if (i % 3 == 0) o.stop_ids = {ids[2]};  // the output ends at its first occurrence
    if (i % 3 == 1) {                       // ... not before the 7th id
      o.stop_ids = {ids[1]};
      o.min_tokens = 7;
    }
    if (i % 3 == 2) o.allowed_ids = allowed;
    o.ignore_eos = i % 3 == 0 || i % 2 == 0;  // the stop id ends it all the same
  }
  std::vector<std::vector<GenerationResult>> solo(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) solo[i] = run({reqs[i]}, EngineOptions{16, 0, 512, 16});
  for (size_t i = 0; i < reqs.size(); ++i) {
    const GenerationResult& r = solo[i][0];
    const std::vector<int32_t>& before = unconstrained[i].ids;
    if (i % 3 == 0) {
      const auto first = std::find(before.begin(), before.end(), before[2]);
      EXPECT_EQ(r.ids, std::vector<int32_t>(before.begin(), first + 1)) << "request " << i;
      EXPECT_EQ(r.reason, StopReason::Eos) << "request " << i;
    } else if (i % 3 == 1) {
      const int32_t stop = reqs[i].opts.stop_ids[0];
      EXPECT_GE(r.ids.size(), 7u) << "request " << i;
      for (size_t k = 0; k + 1 < std::min<size_t>(r.ids.size(), 7); ++k) EXPECT_NE(r.ids[k], stop) << i;
      if (r.reason == StopReason::Eos) {
        const std::vector<int32_t> ends = {stop, bundle.eos_ids().front(), bundle.eos_ids().back()};
        EXPECT_NE(std::find(ends.begin(), ends.end(), r.ids.back()), ends.end()) << "request " << i;
      }
    } else {
      for (int32_t id : r.ids)
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), id), allowed.end()) << "request " << i << ": " << id;
    }
  }
  EngineOptions drafting{16, 0, 512, 16};
  drafting.draft_tokens = 3;
  drafting.draft_min_ngram = 1;
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 9, 5, 8}, drafting}) {
    const std::vector<GenerationResult> together = run(reqs, o);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(together[i].ids, solo[i][0].ids) << "request " << i;
      EXPECT_EQ(together[i].reason, solo[i][0].reason) << "request " << i;
    }
  }
  Req bad = reqs[0];
  bad.opts.allowed_ids = {-1};
  Engine engine(*bundle.model, pool, EngineOptions{16, 0, 512, 16});
  EXPECT_THROW(engine.add(bad.prompt, bad.opts), Error);
}

// vLLM's bad_words: a banned id never comes; a banned pair's second id never
// follows its first; the output is the free one until the first place a ban
// applied; batched and drafted runs give each request's ids alone.
TEST(Engine, BadWordsAreNeverCompletedAndBatchInvariant) {
  ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(2);
  auto run = [&](const std::vector<Req>& reqs, const EngineOptions& o) {
    return run_together(*bundle.model, pool, reqs, o);
  };
  std::vector<Req> reqs = requests();
  for (Req& r : reqs) r.opts.max_new_tokens = 12;
  const std::vector<GenerationResult> free = run(reqs, EngineOptions{16, 0, 512, 16});
  auto contains_pair = [](const std::vector<int32_t>& ids, int32_t a, int32_t b) {
    for (size_t k = 0; k + 1 < ids.size(); ++k)
      if (ids[k] == a && ids[k + 1] == b) return true;
    return false;
  };
  const auto vocab = static_cast<int32_t>(bundle.model->config().vocab_size);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::vector<int32_t>& ids = free[i].ids;
    ASSERT_GE(ids.size(), 6u);
    // Each request bans what it produced freely. 0: its 3rd id, and the pair
    // at its 5th; 1: its first pair only (the first id still comes, not the
    // second after it); 2: pairs that never apply: another id before its 2nd,
    // and its 1st after the prompt's last (only the output counts).
    if (i % 3 == 0) reqs[i].opts.bad_words = {{ids[2]}, {ids[4], ids[5]}};
    if (i % 3 == 1) reqs[i].opts.bad_words = {{ids[0], ids[1]}};
    if (i % 3 == 2) reqs[i].opts.bad_words = {{(ids[0] + 1) % vocab, ids[1]}, {reqs[i].prompt.back(), ids[0]}};
  }
  std::vector<GenerationResult> solo;
  for (const Req& r : reqs) solo.push_back(run({r}, EngineOptions{16, 0, 512, 16})[0]);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::vector<int32_t>& before = free[i].ids;
    const std::vector<int32_t>& after = solo[i].ids;
    if (i % 3 == 1) {
      EXPECT_EQ(after[0], before[0]) << "request " << i;
      EXPECT_NE(after[1], before[1]) << "request " << i;
      EXPECT_FALSE(contains_pair(after, before[0], before[1])) << "request " << i;
      continue;
    }
    if (i % 3 == 2) {
      EXPECT_EQ(after, before) << "request " << i;
      continue;
    }
    EXPECT_EQ(std::count(after.begin(), after.end(), before[2]), 0) << "request " << i;
    EXPECT_FALSE(contains_pair(after, before[4], before[5])) << "request " << i;
    const auto first = std::find(before.begin(), before.end(), before[2]);  // where the single ban first bites
    const size_t same = static_cast<size_t>(first - before.begin());
    EXPECT_EQ(std::vector<int32_t>(after.begin(), after.begin() + static_cast<long>(same)),
              std::vector<int32_t>(before.begin(), first))
        << "request " << i;
    EXPECT_NE(after[same], before[same]) << "request " << i;
  }
  // A review finding: bans that leave no allowed id aborted a batch (a 500 on
  // the server); the request fails alone, its own fault. Allowed {A, B}, B
  // banned, A banned after A: the second token has nothing to draw.
  Req stuck = reqs[0];
  stuck.opts.allowed_ids = {free[0].ids[0], free[0].ids[1]};
  stuck.opts.bad_words = {{free[0].ids[1]}, {free[0].ids[0], free[0].ids[0]}};
  ASSERT_NE(free[0].ids[0], free[0].ids[1]);
  reqs.push_back(stuck);
  solo.push_back(run({stuck}, EngineOptions{16, 0, 512, 16})[0]);
  EXPECT_EQ(solo.back().reason, StopReason::Error);
  EXPECT_TRUE(solo.back().refused);
  EXPECT_EQ(solo.back().ids, std::vector<int32_t>{free[0].ids[0]});
  EXPECT_NE(solo.back().error.find("nothing can be drawn at output token 2"), std::string::npos) << solo.back().error;
  EngineOptions drafting{16, 0, 512, 16};
  drafting.draft_tokens = 3;
  drafting.draft_min_ngram = 1;
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, EngineOptions{4, 9, 5, 8}, drafting}) {
    const std::vector<GenerationResult> together = run(reqs, o);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(together[i].ids, solo[i].ids) << "request " << i;
      EXPECT_EQ(together[i].reason, solo[i].reason) << "request " << i;
    }
  }
  Req bad = reqs[0];
  bad.opts.bad_words = {{1, static_cast<int32_t>(bundle.model->config().vocab_size)}};
  Engine engine(*bundle.model, pool, EngineOptions{16, 0, 512, 16});
  EXPECT_THROW(engine.add(bad.prompt, bad.opts), Error);
  bad.opts.bad_words = {{}};
  EXPECT_THROW(engine.add(bad.prompt, bad.opts), Error);
}

// vLLM's thinking_token_budget on a scripted model that reasons at length:
// the block holds the budget's ids, then </think> (forced), then the answer
// the model goes on with; the same ids batched and with drafts.
TEST(Engine, AThinkingBudgetClosesTheBlockAndTheAnswerFollows) {
  test::ScratchDir dir("engine-thinking");
  constexpr int32_t kStart = 1, kOpen = 10, kClose = 11, kEos = 2047;
  std::vector<int32_t> chain = {kStart, kOpen};
  for (int32_t k = 0; k < 20; ++k) chain.push_back(100 + k);
  chain.insert(chain.end(), {kClose, 200, 201, kEos});
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 2048;
  config.eos_token_ids = {kEos};
  write_scripted_test_model(dir.path(), config, DType::BF16, chain);
  auto model = Qwen3Model::load(dir.path());
  ThreadPool pool(2);
  auto request = [&](std::vector<int32_t> prompt, int64_t budget) {
    Req r;
    r.prompt = std::move(prompt);
    r.opts.max_new_tokens = 40;
    r.opts.eos_ids = {kEos};
    r.opts.sampling.temperature = 0;
    r.opts.thinking = {budget, kOpen, kClose, r.prompt.back() == kOpen};
    return r;
  };
  const std::vector<Req> reqs = {request({kStart}, -1), request({kStart}, 3), request({kStart}, 0),
                                 request({kStart, kOpen}, 2)};
  const std::vector<std::vector<int32_t>> want = {std::vector<int32_t>(chain.begin() + 1, chain.end()),
                                                  {kOpen, 100, 101, 102, kClose, 200, 201, kEos},
                                                  {kOpen, kClose, 200, 201, kEos},
                                                  {100, 101, kClose, 200, 201, kEos}};
  EngineOptions drafting{16, 0, 512, 16};
  drafting.draft_tokens = 4;
  drafting.draft_min_ngram = 1;
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 1}, EngineOptions{16, 0, 512, 16}, drafting}) {
    Engine engine(*model, pool, o);
    std::vector<int64_t> handles;
    for (const Req& r : reqs) handles.push_back(engine.add(r.prompt, r.opts));
    engine.run_until_idle();
    for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(engine.result(handles[i]).ids, want[i]) << "request " << i;
  }
}

// A grammar that cannot go on (too ambiguous) fails its own request, marked as
// the request's fault; the others run on (a re-hunt: batch ended the whole run).
TEST(Engine, AGrammarThatCannotGoOnFailsOnlyItsRequest) {
  ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(2);
  grammar::GrammarBuilder b;  // "x" then one of 5000 ways: more stacks than a matcher follows
  std::vector<grammar::Expr> ways;
  for (int i = 0; i < 5000; ++i) ways.push_back(grammar::literal("y" + std::to_string(i)));
  const int32_t root = b.rule("root");
  b.define(root, grammar::sequence({grammar::literal("x"), grammar::choice(std::move(ways))}));
  GenerationOptions constrained;
  constrained.max_new_tokens = 4;
  constrained.sampling.temperature = 1;
  constrained.grammar = output_grammar(std::make_shared<const grammar::Grammar>(std::move(b).build(root)),
                                       *bundle.tokenizer, bundle.token_trie(), ReasoningBlock::None, "test");
  GenerationOptions free = constrained;
  free.grammar = nullptr;
  Engine engine(*bundle.model, pool, {16, 0, 512, 4});
  const int64_t bad = engine.add(std::vector<int32_t>{785, 6722}, constrained);
  const int64_t good = engine.add(std::vector<int32_t>{785, 6722}, free);
  engine.run_until_idle();
  EXPECT_EQ(engine.result(bad).reason, StopReason::Error);
  EXPECT_TRUE(engine.result(bad).refused);
  EXPECT_NE(engine.result(bad).error.find("too ambiguous"), std::string::npos) << engine.result(bad).error;
  EXPECT_EQ(engine.result(good).reason, StopReason::MaxTokens);
  EXPECT_EQ(engine.result(good).ids.size(), 4u);
}

using test::hidden_alone;
using test::logits_alone;

// Embedding and scoring requests share steps (chunked, preempted,
// prefix-cached) with generating ones; each gets the bits of its prompt run
// alone (the hidden state, or the logits of its ids), and the generating ones
// still get their solo ids.
TEST(Engine, EmbeddingsAreBatchInvariantAmongGeneratingRequests) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  const std::vector<Req> reqs = requests();
  const std::vector<std::vector<int32_t>> solo = solo_ids(*model, reqs, pool);
  std::vector<std::vector<int32_t>> texts = {{785, 6722, 315, 9625, 374}, {42}, {}, {785, 6722, 315}};
  for (int t = 0; t < 23; ++t) texts[2].push_back((t * 131 + 7) % 151000);
  const std::vector<int32_t> score_ids = {9693, 2152, 9693};  // Qwen3's "yes", "no", and "yes" again
  std::vector<std::vector<float>> expected, expected_scores;
  for (const auto& text : texts) {
    expected.push_back(hidden_alone(*model, text, pool));
    const std::vector<float> logits = logits_alone(*model, text, pool);
    expected_scores.push_back({});
    for (int32_t t : score_ids) expected_scores.back().push_back(logits[static_cast<size_t>(t)]);
  }
  const EngineOptions configs[] = {{16, 0, 512, 16}, {4, 0, 5, 4}, {4, 9, 64, 8}};
  for (const EngineOptions& o : configs) {
    Engine engine(*model, pool, o);
    std::vector<int64_t> generating, embedding, scoring;
    for (size_t i = 0; i < std::max(reqs.size(), texts.size()); ++i) {
      if (i < reqs.size()) generating.push_back(engine.add(reqs[i].prompt, reqs[i].opts));
      if (i < texts.size()) embedding.push_back(engine.add_embedding(texts[i]));
      if (i < texts.size()) scoring.push_back(engine.add_scoring(texts[i], score_ids));
      if (i == 2) engine.step();
    }
    engine.run_until_idle();
    embedding.push_back(engine.add_embedding(texts[2]));  // again: its full blocks from the prefix cache
    engine.run_until_idle();
    for (size_t i = 0; i < embedding.size(); ++i) {
      const size_t text = i < texts.size() ? i : 2;
      const std::vector<float>& want = expected[text];
      ASSERT_TRUE(engine.finished(embedding[i]));
      EXPECT_TRUE(engine.result(embedding[i]).ids.empty());
      EXPECT_EQ(engine.result(embedding[i]).prompt_tokens, static_cast<int64_t>(texts[text].size()));
      const std::span<const float> got = engine.output(embedding[i]);
      ASSERT_EQ(got.size(), want.size()) << "embedding " << i;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << "embedding " << i << " with block size " << o.block_size << ", budget " << o.max_batch_tokens;
    }
    for (size_t i = 0; i < scoring.size(); ++i) {
      ASSERT_TRUE(engine.finished(scoring[i]));
      EXPECT_TRUE(engine.result(scoring[i]).ids.empty());
      const std::span<const float> got = engine.output(scoring[i]);
      EXPECT_EQ(std::vector<float>(got.begin(), got.end()), expected_scores[i])
          << "scores " << i << " with block size " << o.block_size << ", budget " << o.max_batch_tokens;
    }
    if (o.kv_blocks == 0) {  // (9 blocks cannot keep it cached past the generating requests)
      EXPECT_GT(engine.result(embedding.back()).reused_tokens, 0) << "block size " << o.block_size;
    }
    for (size_t i = 0; i < generating.size(); ++i) EXPECT_EQ(engine.result(generating[i]).ids, solo[i]) << i;
    EXPECT_EQ(engine.blocks().used_blocks(), 0);
  }
}

// Embedding and scoring prompts may fill the context (nothing follows them);
// a scoring request names ids in the vocabulary.
TEST(Engine, PromptOnlyRequestsMayFillTheContextAGenerationPromptMayNot) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineOptions o;
  o.context = 8;
  Engine engine(*model, pool, o);
  const std::vector<int32_t> eight = {1, 2, 3, 4, 5, 6, 7, 8}, nine = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_THROW(engine.add(eight, {}), Error);
  const int64_t embedded = engine.add_embedding(eight);
  const int64_t scored = engine.add_scoring(eight, {5, 9693});
  EXPECT_THROW(engine.add_embedding(nine), Error);
  EXPECT_THROW(engine.add_scoring(nine, {5}), Error);
  EXPECT_THROW(engine.add_embedding(std::vector<int32_t>{}), Error);
  EXPECT_THROW(engine.add_scoring(eight, {}), Error);
  for (int32_t bad : {-1, static_cast<int32_t>(model->config().vocab_size)})
    EXPECT_THROW(engine.add_scoring(eight, {5, bad}), Error) << bad;
  engine.run_until_idle();
  EXPECT_EQ(engine.output(embedded).size(), static_cast<size_t>(model->config().hidden_size));
  EXPECT_EQ(engine.output(scored).size(), 2u);
  EXPECT_TRUE(engine.result(scored).ids.empty());
}

// Qwen3-Embedding-8B's checkpoint: untied, no lm_head.weight. It embeds; asked
// to generate, it says why not.
TEST(Engine, AModelWithoutLmHeadEmbedsAndRefusesToGenerate) {
  test::ScratchDir dir("headless");
  Qwen3Config config = test_model_preset("tiny");
  config.vocab_size = 512;
  config.eos_token_ids = {7};
  config.tie_word_embeddings = false;
  write_test_model(dir.path(), config, DType::BF16, 5, Qwen3Layout{"", false});
  auto model = Qwen3Model::load(dir.path());
  ASSERT_FALSE(model->has_lm_head());
  ThreadPool pool(1);
  Engine engine(*model, pool);
  try {
    engine.add(std::vector<int32_t>{1, 2, 3}, {});
    ADD_FAILURE() << "a model without lm_head generated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it embeds, it cannot generate"), std::string::npos) << e.what();
  }
  EXPECT_THROW(engine.add_scoring(std::vector<int32_t>{1, 2, 3}, {5}), Error);
  const int64_t h = engine.add_embedding(std::vector<int32_t>{1, 2, 3});
  engine.run_until_idle();
  const std::span<const float> e = engine.output(h);
  EXPECT_EQ(std::vector<float>(e.begin(), e.end()), hidden_alone(*model, {1, 2, 3}, pool));
}

// OpenAI's predicted outputs: a request drafts from its prediction with
// speculative decoding otherwise off. A prediction that is the answer is all
// confirmed (a step takes many tokens), an edited one partly, a wrong one not
// at all; each request's ids are those of its run alone, sampled or greedy,
// beside requests without one, and with prompt lookup on too (whose drafts
// are not the prediction's). A request its caller stops counts only the ids
// it kept as confirmed.
TEST(Engine, PredictionsDraftTheAnswerAndChangeNoId) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  std::vector<Req> reqs = requests();
  for (Req& r : reqs) r.opts.max_new_tokens = 24;
  const std::vector<std::vector<int32_t>> solo = solo_ids(*model, reqs, pool);
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::vector<int32_t> p = solo[i];
    if (i % 3 == 1) p[p.size() / 2] = (p[p.size() / 2] + 1) % 151000;  // an edit in the middle
    if (i % 3 == 2) std::reverse(p.begin(), p.end());                  // another text
    if (i != 6) reqs[i].opts.prediction = std::make_shared<const Prediction>(p);
  }
  EngineOptions lookup{16, 0, 512, 16};
  lookup.draft_tokens = 3;
  lookup.draft_min_ngram = 1;
  for (const EngineOptions& o : {EngineOptions{16, 0, 512, 16}, lookup}) {
    Engine engine(*model, pool, o);
    std::vector<int64_t> handles;
    for (const Req& r : reqs) handles.push_back(engine.add(r.prompt, r.opts));
    engine.run_until_idle();
    for (size_t i = 0; i < reqs.size(); ++i) {
      const GenerationResult& r = engine.result(handles[i]);
      EXPECT_EQ(r.ids, solo[i]) << "request " << i;
      const auto accepted = std::count(r.from_prediction.begin(), r.from_prediction.end(), true);
      if (i == 6) {
        EXPECT_TRUE(r.from_prediction.empty() && r.rejected_prediction_tokens == 0) << "no prediction";
        continue;
      }
      ASSERT_EQ(r.from_prediction.size(), r.ids.size()) << "request " << i;
      EXPECT_FALSE(r.from_prediction[0]) << "the first token comes from the prompt's step";
      if (i % 3 == 0 && o.draft_tokens == 0) {
        // The answer itself: after the first token, all of it.
        EXPECT_GE(accepted, 20) << "request " << i;
        EXPECT_EQ(r.rejected_prediction_tokens, 0) << "request " << i;
      } else if (i % 3 == 1 && o.draft_tokens == 0) {  // 16 ids from the second on: confirmed up to the edit
        EXPECT_GE(accepted, 11) << "request " << i;
        EXPECT_GT(r.rejected_prediction_tokens, 0) << "request " << i;
      }
      EXPECT_LE(r.rejected_prediction_tokens, 24) << "each id of the prediction counts once";
    }
    if (o.draft_tokens > 0) {
      EXPECT_GT(engine.draft_stats().drafted, 0);
    }
  }
  // Stopped by its caller at its 10th token: the first draft (16 ids, all
  // right) ran whole, but the answer holds 9 of them.
  Engine engine(*model, pool, {16, 0, 512, 16});
  int64_t seen = 0;
  const int64_t h =
      engine.add(reqs[0].prompt, reqs[0].opts, [&](int32_t, const TokenLogprobs*) { return ++seen < 10; });
  engine.run_until_idle();
  EXPECT_EQ(engine.result(h).ids, std::vector<int32_t>(solo[0].begin(), solo[0].begin() + 10));
  const std::vector<bool>& predicted = engine.result(h).from_prediction;
  EXPECT_EQ(std::count(predicted.begin(), predicted.end(), true), 9);
  EXPECT_EQ(engine.result(h).rejected_prediction_tokens, 7);
  GenerationOptions bad = reqs[0].opts;
  bad.prediction = std::make_shared<const Prediction>(std::vector<int32_t>{5, 151936});
  try {
    engine.add(reqs[0].prompt, bad);
    ADD_FAILURE() << "a prediction outside the vocabulary was queued";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prediction's token id 151936 is outside the vocabulary"), std::string::npos)
        << e.what();
  }
}
