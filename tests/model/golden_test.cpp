// The forward pass against transformers' Qwen3ForCausalLM: golden logits,
// greedy paths, and KV-cache decode against full recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "model/qwen3.h"
#include "ops/matmul.h"
#include "test_util.h"

using namespace qinfer;
using nlohmann::json;
using test::argmax;

namespace {

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, LastPositionLogitsWithin1e4) {
  const test::Golden g = test::load_golden(GetParam());
  auto model = Qwen3Model::load(test::data_path("models/" + GetParam()));
  ThreadPool pool(2);
  ForwardState st;
  float worst = 0;
  for (size_t p = 0; p < g.prompts(); ++p) {
    KvCache cache = model->make_cache();
    auto logits = forward(*model, g.ids(p), 0, cache, st, pool);
    ASSERT_EQ(logits.size(), g.vocab());
    const float max_diff = test::max_abs_diff(logits, g.logits_of(p));
    EXPECT_LE(max_diff, 1e-4f) << "prompt " << p;
    worst = std::max(worst, max_diff);
  }
  std::printf("[ %s ] max |dlogit| over 5 prompts: %.3g\n", GetParam().c_str(), worst);
}

// What an embedding model pools: the last position's hidden state after the
// final norm (BatchSeq::Logits::Hidden). Times the lm_head it gives the golden
// logits, so it is transformers' hidden state to the same tolerance.
TEST_P(GoldenTest, LastHiddenStateTimesLmHeadGivesTheGoldenLogits) {
  const test::Golden g = test::load_golden(GetParam());
  auto model = Qwen3Model::load(test::data_path("models/" + GetParam()));
  ThreadPool pool(2);
  ForwardState st;
  const int64_t H = model->config().hidden_size;
  std::vector<float> head_row(static_cast<size_t>(H)), logits(g.vocab());
  for (size_t p = 0; p < g.prompts(); ++p) {
    const auto ids = g.ids(p);
    KvCache cache = model->make_cache();
    const auto n = static_cast<int64_t>(ids.size());
    cache.ensure(n);
    Batch b{ids, {{n, 0, cache.table(), BatchSeq::Logits::Hidden}}};
    EXPECT_TRUE(forward(*model, b, cache.pool(), st, pool).empty());
    ASSERT_EQ(st.hidden.size(), static_cast<size_t>(H));
    for (size_t v = 0; v < g.vocab(); ++v) {
      widen_row(model->weights().lm_head, static_cast<int64_t>(v), head_row.data());
      double logit = 0;
      for (int64_t i = 0; i < H; ++i) logit += static_cast<double>(head_row[i]) * st.hidden[i];
      logits[v] = static_cast<float>(logit);
    }
    EXPECT_LE(test::max_abs_diff(logits, g.logits_of(p)), 1e-4f) << "prompt " << p;
  }
}

TEST_P(GoldenTest, GreedyTokensWithKvCache) {
  const test::Golden g = test::load_golden(GetParam());
  auto model = Qwen3Model::load(test::data_path("models/" + GetParam()));
  ThreadPool pool(2);
  ForwardState st;
  for (const json& prompt : g.meta["prompts"]) {
    auto ids = prompt["ids"].get<std::vector<int32_t>>();
    const auto want = prompt["greedy"].get<std::vector<int32_t>>();
    const size_t must_match = prompt["tokens_before_margin_below"]["0.001"].get<size_t>();
    KvCache cache = model->make_cache();
    std::vector<int32_t> got;
    int32_t next = argmax(forward(*model, ids, 0, cache, st, pool));
    for (size_t step = 0; step < want.size(); ++step) {
      got.push_back(next);
      const int32_t tok = next;
      next = argmax(forward(*model, std::span(&tok, 1), static_cast<int64_t>(ids.size() + step), cache, st, pool));
    }
    for (size_t i = 0; i < must_match; ++i) ASSERT_EQ(got[i], want[i]) << prompt["text"] << " step " << i;
  }
}

// Decoding one token at a time through the cache must equal recomputing the
// whole sequence, at positions well past 0 (RoPE is the identity at 0).
TEST_P(GoldenTest, KvCacheDecodeEqualsFullRecompute) {
  auto model = Qwen3Model::load(test::data_path("models/" + GetParam()));
  ThreadPool pool(2);
  ForwardState st;
  std::vector<int32_t> seq;
  for (int i = 0; i < 40; ++i) seq.push_back((i * 7919 + 13) % 151000);
  KvCache cache = model->make_cache();
  forward(*model, std::span(seq).first(20), 0, cache, st, pool);  // prefill 20
  for (int64_t pos = 20; pos < 40; ++pos) {
    auto step_span = forward(*model, std::span(&seq[pos], 1), pos, cache, st, pool);
    const std::vector<float> step(step_span.begin(), step_span.end());
    if (pos % 6 != 3 && pos != 39) continue;
    KvCache fresh = model->make_cache();
    ForwardState st2;
    auto full = forward(*model, std::span(seq).first(pos + 1), 0, fresh, st2, pool);
    EXPECT_LE(test::max_abs_diff(full, step), 1e-5f) << "position " << pos;
  }
}

TEST_P(GoldenTest, AllLogitsMatchPerPositionRuns) {
  auto model = Qwen3Model::load(test::data_path("models/" + GetParam()));
  ThreadPool pool(1);
  ForwardState st;
  const std::vector<int32_t> ids = {785, 6722, 315, 9625, 374};
  KvCache cache = model->make_cache();
  auto all_span = forward(*model, ids, 0, cache, st, pool, true);
  const std::vector<float> all(all_span.begin(), all_span.end());
  const size_t V = static_cast<size_t>(model->config().vocab_size);
  ASSERT_EQ(all.size(), 5 * V);
  KvCache c2 = model->make_cache();
  auto three = forward(*model, std::span(ids).first(3), 0, c2, st, pool);
  for (size_t i = 0; i < V; ++i) ASSERT_NEAR(all[2 * V + i], three[i], 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::Values("tiny", "tiny2"));

}  // namespace
