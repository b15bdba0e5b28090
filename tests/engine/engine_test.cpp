// The engine against Session::generate: every request's ids equal its solo
// run, greedy and seeded sampling, at any parallelism, with a token budget
// small enough to chunk every prompt, and with a KV pool so small that
// sequences are preempted; cancellation frees everything.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using namespace qinfer::engine;

namespace {

struct Req {
  std::vector<int32_t> prompt;
  GenerationOptions opts;
};

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

class EngineTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineTest, EveryRequestGetsTheIdsOfItsSoloRun) {
  LoadOptions lo;
  if (std::string(GetParam()) == "q4") lo.weights = WeightFormat::Q4;
  auto model = Qwen3Model::load(test::data_path("models/tiny"), lo);
  ThreadPool pool(2);
  const std::vector<Req> reqs = requests();
  std::vector<std::vector<int32_t>> solo;
  for (const Req& r : reqs) {
    Session s(*model, pool);
    solo.push_back(s.generate(r.prompt, r.opts, {}).ids);
  }
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

INSTANTIATE_TEST_SUITE_P(Weights, EngineTest, ::testing::Values("stored", "q4"));

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
  const int64_t b = engine.add(prompt, opts, [&](int32_t) { return ++seen < 3; });
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

}  // namespace
