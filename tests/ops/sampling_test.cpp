// The sampler's vocabulary passes (ops/sampling.h) against plain loops, on
// every SIMD target, at sizes that leave a scalar tail.
#include "ops/sampling.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "each_target.h"

using namespace qinfer;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr size_t kSizes[] = {1, 7, 16, 33, 1000};

// Normal logits with NaN and +-inf sprinkled in.
std::vector<float> logits(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  if (n > 5) {
    x[n / 5] = std::numeric_limits<float>::quiet_NaN();
    x[n / 3] = kInf;
    x[n / 2] = -kInf;
  }
  return x;
}

TEST(Sampling, SanitizeMaxReplacesNanAndInfinity) {
  test::for_each_target([] {
    for (size_t n : kSizes) {
      std::vector<float> x = logits(n, n), want = x;
      float want_max = -kInf;
      for (float& v : want) {
        v = std::isnan(v) ? -kInf : std::min(v, FLT_MAX);
        want_max = std::max(want_max, v);
      }
      EXPECT_EQ(sampling::sanitize_max(x), want_max) << n;
      EXPECT_EQ(x, want) << n;
    }
  });
}

TEST(Sampling, FindFirstAtLeastFromEveryStart) {
  test::for_each_target([] {
    for (size_t n : kSizes) {
      std::vector<float> x = logits(n, n + 1);
      sampling::sanitize_max(x);
      for (float threshold : {-1.0f, 2.0f, 7.5f, FLT_MAX, kInf}) {
        for (size_t begin = 0; begin <= n; ++begin) {
          size_t want = begin;
          while (want < n && !(x[want] >= threshold)) ++want;
          ASSERT_EQ(sampling::find_first_at_least(x, begin, threshold), want) << n << " " << begin;
        }
      }
    }
  });
}

TEST(Sampling, ExpWeightsFollowExpAndFlagZeros) {
  test::for_each_target([] {
    for (size_t n : kSizes) {
      std::vector<float> x = logits(n, n + 2);
      const float max = sampling::sanitize_max(x);
      std::vector<float> w(n);
      const bool any_zero = sampling::exp_weights(x, max, 0.7f, w.data());
      bool want_zero = false;
      for (size_t i = 0; i < n; ++i) {
        const float want = std::min(std::exp((x[i] - max) / 0.7f), 1.0f);
        EXPECT_NEAR(w[i], want, 1e-6f * want + 1e-37f) << n << " " << i;
        EXPECT_LE(w[i], 1.0f);
        want_zero |= w[i] == 0;
      }
      EXPECT_EQ(any_zero, want_zero) << n;
      if (n > 5) {
        EXPECT_TRUE(any_zero);  // the -inf logits
      }
    }
  });
}

TEST(Sampling, MassAtLeastAndKeepAtLeast) {
  test::for_each_target([] {
    for (size_t n : kSizes) {
      std::vector<float> x = logits(n, n + 3);
      const float max = sampling::sanitize_max(x);
      std::vector<float> w(n);
      sampling::exp_weights(x, max, 1.0f, w.data());
      for (float threshold : {0.0f, 1e-3f, 0.1f, 1.0f}) {
        double want_mass = 0;
        std::vector<int32_t> want_ids;
        std::vector<float> want_w;
        for (size_t i = 0; i < n; ++i) {
          if (w[i] < threshold) continue;
          want_mass += w[i];
          want_ids.push_back(static_cast<int32_t>(i));
          want_w.push_back(w[i]);
        }
        EXPECT_NEAR(sampling::mass_at_least(w, threshold), want_mass, 1e-12 * (1 + want_mass)) << n;
        std::vector<int32_t> ids(n);
        std::iota(ids.begin(), ids.end(), 0);
        std::vector<float> kept = w;
        const size_t k = sampling::keep_at_least(ids, kept, threshold);
        ids.resize(k);
        kept.resize(k);
        EXPECT_EQ(ids, want_ids) << n << " " << threshold;
        EXPECT_EQ(kept, want_w) << n << " " << threshold;
      }
    }
  });
}

}  // namespace
