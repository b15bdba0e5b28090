// token_logprobs: log softmax of the raw logits for the chosen token and the
// most likely ones.
#include "runtime/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace qinfer;

TEST(Logprobs, LogSoftmaxOfTheChosenAndTheTopOnes) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  double z = 0;
  for (float l : logits) z += std::exp(l);
  const TokenLogprobs t = token_logprobs(logits, 2, 3);
  EXPECT_EQ(t.id, 2);
  EXPECT_NEAR(t.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, 1);  // tie with id 3: the lower id first
  EXPECT_EQ(t.top[1].first, 3);
  EXPECT_EQ(t.top[2].first, 2);
  EXPECT_EQ(t.top[2].second, t.logprob);
  EXPECT_NEAR(t.top[0].second, 3.0 - std::log(z), 1e-6);
  // Rank: 1 + the tokens strictly more likely (vLLM's), ties sharing one.
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(token_logprobs(logits, 3, 0).rank, 1);
  EXPECT_EQ(token_logprobs(logits, 1, 0).rank, 1);
  EXPECT_EQ(token_logprobs(logits, 4, 0).rank, 5);
  EXPECT_TRUE(token_logprobs(logits, 0, 0).top.empty());
  EXPECT_EQ(token_logprobs(logits, 0, 99).top.size(), logits.size());
  // A later equal logit does not displace a kept one.
  const std::vector<float> ties = {0.0f, 3.0f, 3.0f, 3.0f, 5.0f};
  const TokenLogprobs kept = token_logprobs(ties, 0, 2);
  ASSERT_EQ(kept.top.size(), 2u);
  EXPECT_EQ(kept.top[0].first, 4);
  EXPECT_EQ(kept.top[1].first, 1);
}

TEST(Logprobs, NanCountsAsMinusInfinity) {
  const std::vector<float> logits = {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
  const TokenLogprobs t = token_logprobs(logits, 0, 2);
  EXPECT_EQ(t.logprob, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(t.rank, 3);
  EXPECT_NEAR(t.top[0].second, std::log(0.5), 1e-6);
  EXPECT_EQ(t.top[0].first, 1);
  EXPECT_EQ(t.top[1].first, 2);
}
