#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "util/error.h"

namespace qinfer {
namespace {

const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

SamplingParams make_params(float temperature, int top_k = 0, float top_p = 1.0f, float min_p = 0.0f,
                           uint64_t seed = 1234) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = seed;
  return p;
}

std::vector<int32_t> draws(Sampler& sampler, const std::vector<float>& logits, int n,
                           const std::vector<int32_t>& history = {}, size_t prompt_len = 0) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) {
    std::vector<float> scratch = logits;
    ids.push_back(sampler.sample(scratch, history, prompt_len));
  }
  return ids;
}

std::vector<int> draw_counts(const SamplingParams& params, const std::vector<float>& logits, int n,
                             const std::vector<int32_t>& history = {}, size_t prompt_len = 0) {
  Sampler sampler(params, logits.size());
  std::vector<int> counts(logits.size(), 0);
  for (int32_t id : draws(sampler, logits, n, history, prompt_len)) ++counts.at(id);
  return counts;
}

std::vector<int> support_of(const std::vector<int>& counts) {
  std::vector<int> ids;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) ids.push_back(int(i));
  return ids;
}

// The target distribution, written independently of the sampler: double
// precision, a full stable sort, the filters exactly as specified.
std::vector<double> reference_probs(const std::vector<float>& logits, double temperature, int top_k = 0,
                                    double top_p = 1.0, double min_p = 0.0) {
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  if (top_k > 0 && size_t(top_k) < order.size()) order.resize(top_k);
  double max_logit = logits[order[0]];
  std::vector<double> probs(logits.size(), 0.0);
  double total = 0;
  for (size_t id : order) total += probs[id] = std::exp((logits[id] - max_logit) / temperature);
  for (size_t id : order) probs[id] /= total;
  if (top_p < 1) {
    double cumulative = 0;
    size_t kept = 0;
    while (kept < order.size() && cumulative < top_p) cumulative += probs[order[kept++]];
    for (size_t i = kept; i < order.size(); ++i) probs[order[i]] = 0;
  }
  double p_max = probs[order[0]];
  for (double& p : probs)
    if (p < min_p * p_max) p = 0;
  total = std::accumulate(probs.begin(), probs.end(), 0.0);
  for (double& p : probs) p /= total;
  return probs;
}

std::vector<double> dense(const std::vector<TokenProb>& sparse, size_t vocab_size) {
  std::vector<double> probs(vocab_size, 0.0);
  for (const TokenProb& t : sparse) probs.at(t.id) += t.prob;
  return probs;
}

std::vector<double> distribution_of(const SamplingParams& params, const std::vector<float>& logits,
                                    const std::vector<int32_t>& history = {}, size_t prompt_len = 0) {
  Sampler sampler(params, logits.size());
  std::vector<float> scratch = logits;
  return dense(sampler.distribution(scratch, history, prompt_len), logits.size());
}

void expect_probs_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Below 1e-30 the float weights may underflow where doubles don't.
    if (want[i] == 0 || want[i] > 1e-30) {
      EXPECT_EQ(got[i] > 0, want[i] > 0) << "support differs at id " << i;
    }
    EXPECT_NEAR(got[i], want[i], 1e-5 * want[i] + 1e-9) << "id " << i;
  }
}

// Pearson's chi-square statistic of observed counts against probabilities
// (every expected count must be >= 5); a draw outside the support is +inf.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int* df) {
  double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double statistic = 0;
  *df = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0) {
      if (counts[i] > 0) return kInf;
      continue;
    }
    double expected = n * probs[i];
    EXPECT_GE(expected, 5.0) << "test setup: too few draws for id " << i;
    statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++*df;
  }
  return statistic;
}

// Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty).
double chi_square_critical(int df) {
  const double z = 3.0902;
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

void expect_draws_follow(const SamplingParams& params, const std::vector<float>& logits,
                         const std::vector<double>& target, int n) {
  int df = 0;
  double statistic = chi_square(draw_counts(params, logits, n), target, &df);
  ASSERT_GT(df, 0);
  EXPECT_LT(statistic, chi_square_critical(df)) << "df " << df;
}

std::vector<float> normal_logits(size_t n, float sigma, uint64_t seed, float round_to = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> logits(n);
  for (float& l : logits) {
    l = normal(rng);
    if (round_to > 0) l = std::round(l / round_to) * round_to;  // many exact ties
  }
  return logits;
}

TEST(Sampler, GreedyAlwaysTakesTheArgmax) {
  Sampler sampler(make_params(0.0f, 3, 0.5f), kLogits.size());
  for (int32_t id : draws(sampler, kLogits, 1000)) ASSERT_EQ(id, 0);
  std::vector<float> tied = {1.0f, 3.0f, 3.0f, 0.0f};
  Sampler tie_sampler(make_params(0.0f), tied.size());
  EXPECT_EQ(tie_sampler.sample(tied, {}, 0), 1);  // first index on ties
  tied = {1.0f, 3.0f, 3.0f, 0.0f};
  std::vector<TokenProb> probs = tie_sampler.distribution(tied, {}, 0);
  ASSERT_EQ(probs.size(), 1u);
  EXPECT_EQ(probs[0].id, 1);
  EXPECT_EQ(probs[0].prob, 1.0);
}

TEST(Sampler, TopK2HasSupportExactly01) {
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 2), kLogits, 10000)), (std::vector<int>{0, 1}));
}

TEST(Sampler, TopP09HasSupport0123) {
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 0, 0.9f), kLogits, 10000)), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Sampler, Temperature2TopP05HasSupport01) {
  EXPECT_EQ(support_of(draw_counts(make_params(2.0f, 0, 0.5f), kLogits, 10000)), (std::vector<int>{0, 1}));
}

TEST(Sampler, TopK1MakesTopPIrrelevant) {
  for (float top_p : {0.1f, 0.5f, 0.9f, 1.0f}) {
    EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 1, top_p), kLogits, 2000)), (std::vector<int>{0}))
        << "top_p " << top_p;
    expect_probs_near(distribution_of(make_params(1.0f, 1, top_p), kLogits), {1, 0, 0, 0, 0});
  }
}

TEST(Sampler, LowerTemperatureRaisesTheTopProbability) {
  double previous_exact = 0, previous_drawn = 0;
  for (float temperature : {4.0f, 2.0f, 1.0f, 0.5f, 0.25f}) {
    double exact = distribution_of(make_params(temperature), kLogits)[0];
    double drawn = draw_counts(make_params(temperature), kLogits, 10000)[0] / 10000.0;
    EXPECT_GT(exact, previous_exact) << "T " << temperature;
    EXPECT_GT(drawn, previous_drawn) << "T " << temperature;
    EXPECT_NEAR(exact, reference_probs(kLogits, temperature)[0], 1e-6);
    previous_exact = exact;
    previous_drawn = drawn;
  }
}

TEST(Sampler, SameSeedSameSequenceOtherSeedOtherSequence) {
  Sampler a(make_params(1.0f, 0, 1.0f, 0.0f, 42), kLogits.size());
  Sampler b(make_params(1.0f, 0, 1.0f, 0.0f, 42), kLogits.size());
  Sampler c(make_params(1.0f, 0, 1.0f, 0.0f, 43), kLogits.size());
  std::vector<int32_t> seq_a = draws(a, kLogits, 200);
  EXPECT_EQ(seq_a, draws(b, kLogits, 200));
  EXPECT_NE(seq_a, draws(c, kLogits, 200));
}

TEST(Sampler, DrawnFrequenciesMatchTheTarget) {
  struct Config {
    float temperature;
    int top_k;
    float top_p, min_p;
  };
  for (Config c : {Config{1.0f, 0, 1.0f, 0.0f}, Config{0.7f, 3, 1.0f, 0.0f}, Config{1.0f, 0, 0.9f, 0.0f},
                   Config{1.5f, 0, 1.0f, 0.1f}, Config{0.6f, 4, 0.95f, 0.05f}}) {
    SCOPED_TRACE(testing::Message() << "T " << c.temperature << " top_k " << c.top_k << " top_p " << c.top_p
                                    << " min_p " << c.min_p);
    std::vector<double> target = reference_probs(kLogits, c.temperature, c.top_k, c.top_p, c.min_p);
    SamplingParams params = make_params(c.temperature, c.top_k, c.top_p, c.min_p);
    expect_probs_near(distribution_of(params, kLogits), target);
    expect_draws_follow(params, kLogits, target, 20000);
  }
}

TEST(Sampler, ChiSquareRejectsAWrongTarget) {
  // The statistical check has power: draws at T = 1 do not pass for T = 1.2.
  std::vector<int> counts = draw_counts(make_params(1.0f), kLogits, 20000);
  int df = 0;
  EXPECT_GT(chi_square(counts, reference_probs(kLogits, 1.2), &df), chi_square_critical(4));
}

TEST(Sampler, LargeVocabularyMatchesTheReference) {
  // Many candidates (top-p without top-k goes through the bucket selection)
  // and many exact ties at the crossing (logits on a 0.25 grid).
  const std::vector<float> logits = normal_logits(5000, 3.0f, 99, 0.25f);
  struct Config {
    float temperature;
    int top_k;
    float top_p, min_p;
  };
  for (Config c : {Config{0.6f, 0, 0.95f, 0.0f}, Config{1.0f, 0, 0.5f, 0.0f}, Config{1.0f, 0, 0.999f, 0.0f},
                   Config{0.6f, 20, 0.95f, 0.0f}, Config{1.0f, 0, 1.0f, 0.05f}, Config{0.8f, 100, 0.8f, 0.02f},
                   Config{1.0f, 0, 1.0f, 0.0f}}) {
    SCOPED_TRACE(testing::Message() << "T " << c.temperature << " top_k " << c.top_k << " top_p " << c.top_p
                                    << " min_p " << c.min_p);
    expect_probs_near(distribution_of(make_params(c.temperature, c.top_k, c.top_p, c.min_p), logits),
                      reference_probs(logits, c.temperature, c.top_k, c.top_p, c.min_p));
  }
  // Qwen3's defaults: draws follow the 20-token target.
  expect_draws_follow(make_params(0.6f, 20, 0.95f), logits, reference_probs(logits, 0.6f, 20, 0.95f), 20000);
}

TEST(Sampler, TopPPrefixReachingFarDownTheTail) {
  // One token of weight 1 and 3000 of weight e^-23 (below every narrowing
  // threshold): top_p just below 1 needs hundreds of tail tokens.
  std::vector<float> logits(3001, -23.0f);
  logits[1234] = 0.0f;
  for (float top_p : {0.99999994f, 0.9999999f, 0.5f}) {
    SCOPED_TRACE(top_p);
    expect_probs_near(distribution_of(make_params(1.0f, 0, top_p), logits), reference_probs(logits, 1.0f, 0, top_p));
  }
}

TEST(Sampler, TopKTiesGoToTheLowerIds) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 2.0f, 2.0f, 0.0f, 2.0f};
  expect_probs_near(distribution_of(make_params(1.0f, 3), logits), reference_probs(logits, 1.0f, 3));
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 3), logits, 3000)), (std::vector<int>{1, 2, 3}));
}

TEST(Sampler, TopKZeroOrAtLeastVocabularyMeansOff) {
  std::vector<double> full = reference_probs(kLogits, 1.0);
  for (int top_k : {0, 5, 6, 1000}) {
    SCOPED_TRACE(top_k);
    expect_probs_near(distribution_of(make_params(1.0f, top_k), kLogits), full);
  }
  expect_probs_near(distribution_of(make_params(1.0f, 4), kLogits), reference_probs(kLogits, 1.0, 4));
}

TEST(Sampler, MinPKeepsTokensWithinAFactorOfTheTop) {
  // Relative probabilities at T = 1: 1, e^-1 = .37, e^-1.5 = .22, e^-2 = .14, e^-3 = .05.
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 0, 1.0f, 0.3f), kLogits, 5000)), (std::vector<int>{0, 1}));
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 0, 1.0f, 0.2f), kLogits, 5000)), (std::vector<int>{0, 1, 2}));
  expect_probs_near(distribution_of(make_params(1.0f, 0, 1.0f, 0.2f), kLogits),
                    reference_probs(kLogits, 1.0f, 0, 1.0f, 0.2f));
  // min_p applies after top-p: its p_max is the top token either way.
  expect_probs_near(distribution_of(make_params(2.0f, 0, 0.8f, 0.5f), kLogits),
                    reference_probs(kLogits, 2.0f, 0, 0.8f, 0.5f));
}

TEST(Sampler, RepetitionPenaltyHuggingFaceSemantics) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  SamplingParams params = make_params(1.0f);
  params.repetition_penalty = 1.5f;
  // Prompt {0, 1, 0} and generated {0, 3}: each distinct token penalized once;
  // a positive logit is divided, a negative one multiplied.
  const std::vector<int32_t> history = {0, 1, 0, 0, 3};
  std::vector<float> penalized = {2.0f / 1.5f, -1.0f * 1.5f, 0.5f, 0.0f, 3.0f};
  expect_probs_near(distribution_of(params, logits, history, 3), reference_probs(penalized, 1.0));

  params.temperature = 0;
  std::vector<float> close = {3.0f, 2.5f};
  Sampler greedy(params, close.size());
  EXPECT_EQ(greedy.sample(close, std::vector<int32_t>{0}, 1), 1);  // 3 / 1.5 < 2.5
}

TEST(Sampler, PresenceAndFrequencyPenaltiesCountGeneratedTokensOnly) {
  SamplingParams params = make_params(1.0f);
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  // Prompt {1, 1, 0}: not counted. Generated {0, 2, 0}.
  const std::vector<int32_t> history = {1, 1, 0, 0, 2, 0};
  std::vector<float> penalized = {2.0f - 0.5f - 2 * 0.25f, 1.0f, 0.5f - 0.5f - 0.25f, 0.0f, -1.0f};
  expect_probs_near(distribution_of(params, kLogits, history, 3), reference_probs(penalized, 1.0));

  // With the repetition penalty too: it goes first and covers the prompt.
  params.repetition_penalty = 2.0f;
  penalized = {2.0f / 2 - 0.5f - 2 * 0.25f, 1.0f / 2, 0.5f / 2 - 0.5f - 0.25f, 0.0f, -1.0f};
  expect_probs_near(distribution_of(params, kLogits, history, 3), reference_probs(penalized, 1.0));
}

TEST(Sampler, LogitBiasAddsAndMinusInfinityBans) {
  SamplingParams params = make_params(1.0f);
  params.logit_bias = {{4, 10.0f}, {1, -0.5f}};
  expect_probs_near(distribution_of(params, kLogits), reference_probs({2.0f, 0.5f, 0.5f, 0.0f, 9.0f}, 1.0));

  params.logit_bias = {{0, -kInf}};
  EXPECT_EQ(draw_counts(params, kLogits, 5000)[0], 0);
  params.temperature = 0;
  Sampler greedy(params, kLogits.size());
  std::vector<float> scratch = kLogits;
  EXPECT_EQ(greedy.sample(scratch, {}, 0), 1);
}

TEST(Sampler, ExtremeLogitsStayFinite) {
  const std::vector<float> logits = {1e4f, -1e4f, 1e4f - 1, 0.0f, -1e4f};
  for (float temperature : {0.01f, 0.6f, 1.0f, 100.0f, 1e6f}) {
    SCOPED_TRACE(temperature);
    std::vector<double> probs = distribution_of(make_params(temperature), logits);
    for (double p : probs) EXPECT_TRUE(std::isfinite(p));
    EXPECT_NEAR(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0, 1e-9);
    expect_probs_near(probs, reference_probs(logits, temperature));
  }
  for (float value : {1e4f, -1e4f, std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()}) {
    std::vector<float> equal(5, value);
    expect_probs_near(distribution_of(make_params(0.7f, 0, 0.9f), equal),
                      reference_probs({0, 0, 0, 0, 0}, 0.7f, 0, 0.9f));
  }
}

TEST(Sampler, NanCountsAsMinusInfinityAndInfinityAsCertain) {
  const std::vector<float> with_nan = {kNaN, 1.0f, kNaN, 0.0f, kNaN};
  expect_probs_near(distribution_of(make_params(1.0f), with_nan),
                    reference_probs({-kInf, 1.0f, -kInf, 0.0f, -kInf}, 1.0));
  EXPECT_EQ(support_of(draw_counts(make_params(1.0f, 2), with_nan, 2000)), (std::vector<int>{1, 3}));
  EXPECT_EQ(draw_counts(make_params(0.0f), with_nan, 1)[1], 1);

  const std::vector<float> with_inf = {0.0f, kInf, 1.0f, kInf, kNaN};
  expect_probs_near(distribution_of(make_params(1.0f), with_inf), {0, 0.5, 0, 0.5, 0});
  EXPECT_EQ(draw_counts(make_params(0.0f), with_inf, 1)[1], 1);

  for (float temperature : {0.0f, 1.0f}) {
    std::vector<float> hopeless = {kNaN, -kInf, kNaN};
    Sampler sampler(make_params(temperature), hopeless.size());
    EXPECT_THROW(sampler.sample(hopeless, {}, 0), Error);
  }
}

// The issue-11 report of "no token has a finite logit" with 1,000 NaN rows
// in 151,936: at the vocabulary's size (the SIMD loops, not the scalar
// tails of the 5-token rows above), NaN logits among finite ones are skipped
// in every path; the report's rows held prompt tokens, so every logit was NaN.
TEST(Sampler, ThousandNanLogitsInAFullVocabularyAreSkipped) {
  const size_t V = 151936;
  std::vector<float> base = normal_logits(V, 3.0f, 7);
  std::vector<bool> is_nan(V);
  for (size_t i = 0; i < 1000; ++i) is_nan[(i * 7919 + 13) % V] = true;
  for (size_t i = 0; i < V; ++i)
    if (is_nan[i]) base[i] = kNaN;
  for (const SamplingParams& p : {make_params(0.0f), make_params(1.0f), make_params(0.7f, 20),
                                  make_params(0.7f, 0, 0.9f), make_params(1.0f, 0, 1.0f, 0.05f)}) {
    Sampler sampler(p, V);
    for (int draw = 0; draw < 20; ++draw) {
      std::vector<float> logits = base;
      const int32_t id = sampler.sample(logits, {}, 0);
      ASSERT_GE(id, 0);
      ASSERT_FALSE(is_nan[static_cast<size_t>(id)]) << "drew a NaN logit's token at temperature " << p.temperature;
    }
  }
}

TEST(Sampler, RejectsBadArguments) {
  auto with = [](auto change) {
    SamplingParams p;
    change(p);
    return p;
  };
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.temperature = -0.1f; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.temperature = kNaN; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.top_k = -1; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.top_p = 0.0f; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.top_p = 1.5f; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.min_p = -0.1f; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.repetition_penalty = 0.0f; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.presence_penalty = kInf; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.logit_bias = {{5, 1.0f}}; }), 5), Error);
  EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.logit_bias = {{0, kNaN}}; }), 5), Error);
  EXPECT_THROW(Sampler(SamplingParams{}, 0), Error);

  SamplingParams params;
  params.repetition_penalty = 1.2f;
  Sampler sampler(params, 5);
  std::vector<float> logits = kLogits;
  std::vector<float> short_logits = {1.0f, 2.0f};
  EXPECT_THROW(sampler.sample(short_logits, {}, 0), Error);
  EXPECT_THROW(sampler.sample(logits, std::vector<int32_t>{1, 2}, 3), Error);
  EXPECT_THROW(sampler.sample(logits, std::vector<int32_t>{1, 5}, 1), Error);
  EXPECT_THROW(sampler.sample(logits, std::vector<int32_t>{-1}, 1), Error);
}

}  // namespace
}  // namespace qinfer
