// Numbers within bounds: every integer (and number with a fraction) in a
// window is matched exactly when it lies within the bounds.
#include "text/grammar/number_range.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "grammar/matching.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

std::shared_ptr<const Grammar> grammar_of(Expr e) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  b.define(root, std::move(e));
  return std::make_shared<const Grammar>(std::move(b).build(root));
}

bool within(double x, const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi) {
  if (lo && (lo->exclusive ? x <= lo->value : x < lo->value)) return false;
  if (hi && (hi->exclusive ? x >= hi->value : x > hi->value)) return false;
  return true;
}

std::vector<std::optional<NumberBound>> bounds() {
  std::vector<std::optional<NumberBound>> out{std::nullopt};
  for (int64_t v : {-120, -99, -10, -1, 0, 1, 9, 10, 99, 100, 250})
    for (bool ex : {false, true}) out.push_back(NumberBound{v, ex});
  return out;
}

TEST(NumberRange, IntegersBetweenMatchExactlyTheIntegersWithin) {
  for (const auto& lo : bounds())
    for (const auto& hi : bounds()) {
      std::shared_ptr<const Grammar> g;
      try {
        g = grammar_of(integers_between(lo, hi, 100));
      } catch (const Error&) {  // refused: then no integer lies between them
        for (int n = -300; n <= 300; ++n) ASSERT_FALSE(within(n, lo, hi)) << n;
        continue;
      }
      for (int n = -300; n <= 300; ++n)
        ASSERT_EQ(matches(g, std::to_string(n)), within(n, lo, hi))
            << n << " in [" << (lo ? lo->value : -999999) << (lo && lo->exclusive ? "x" : "") << ", "
            << (hi ? hi->value : 999999) << (hi && hi->exclusive ? "x" : "") << "]";
      EXPECT_FALSE(matches(g, "-0"));
      EXPECT_FALSE(matches(g, "007"));
      EXPECT_FALSE(matches(g, "1.0"));
    }
}

TEST(NumberRange, OpenSidesReachAHundredDigits) {
  auto g = grammar_of(integers_between(NumberBound{5}, std::nullopt, 100));
  EXPECT_TRUE(matches(g, "1" + std::string(99, '0')));
  EXPECT_FALSE(matches(g, "1" + std::string(100, '0')));
  EXPECT_TRUE(matches(g, "123456789012345678901234567890"));
  EXPECT_FALSE(matches(g, "4"));
  auto neg = grammar_of(integers_between(std::nullopt, NumberBound{-5, true}, 100));
  EXPECT_TRUE(matches(neg, "-6"));
  EXPECT_TRUE(matches(neg, "-" + std::string(100, '9')));
  EXPECT_FALSE(matches(neg, "-5"));
  EXPECT_FALSE(matches(neg, "0"));
  auto big =
      grammar_of(integers_between(NumberBound{-1'000'000'000'000'000'000}, NumberBound{999'999'999'999'999'999}, 100));
  EXPECT_TRUE(matches(big, "-1000000000000000000"));
  EXPECT_FALSE(matches(big, "-1000000000000000001"));
  EXPECT_TRUE(matches(big, "999999999999999999"));
  EXPECT_FALSE(matches(big, "1000000000000000000"));
  EXPECT_THROW(integers_between(NumberBound{2'000'000'000'000'000'000}, std::nullopt, 100), Error);
}

TEST(NumberRange, NumbersBetweenMatchExactlyTheNumbersWithin) {
  std::vector<std::string> texts;
  for (int n = -130; n <= 130; ++n) {
    texts.push_back(std::to_string(n));
    texts.push_back(std::to_string(n) + ".0");
    for (const char* f : {".5", ".05", ".999", ".00", ".10"}) texts.push_back(std::to_string(n) + f);
  }
  texts.insert(texts.end(), {"-0.5", "-0.05", "0.001"});
  for (const auto& lo : bounds())
    for (const auto& hi : bounds()) {
      std::shared_ptr<const Grammar> g;
      try {
        g = grammar_of(numbers_between(lo, hi, 100));
      } catch (const Error&) {
        for (const std::string& t : texts) ASSERT_FALSE(within(std::stod(t), lo, hi)) << t;
        continue;
      }
      for (const std::string& t : texts) {
        const bool negative_zero = t[0] == '-' && std::stod(t) == 0;  // "-0", "-0.0": never written
        const bool want = within(std::stod(t), lo, hi) && !negative_zero;
        ASSERT_EQ(matches(g, t), want) << t << " in [" << (lo ? lo->value : -999999) << (lo && lo->exclusive ? "x" : "")
                                       << ", " << (hi ? hi->value : 999999) << (hi && hi->exclusive ? "x" : "") << "]";
      }
      EXPECT_FALSE(matches(g, "1e2"));
      EXPECT_FALSE(matches(g, "1."));
    }
}

}  // namespace
}  // namespace qinfer::grammar

namespace qinfer::grammar {
namespace {

// A re-hunt finding: 4.999...9 (50 digits) is below 5 exactly but 5.0 as a
// double, so validators that read doubles (Python's json, JavaScript) found
// it outside exclusiveMaximum 5. Numbers with a fraction have 15 digits at
// most; every one a walk writes is within its bounds as a double.
TEST(NumberRange, NumbersStayWithinTheirBoundsAsDoubles) {
  auto g = grammar_of(numbers_between(NumberBound{4}, NumberBound{5, true}, 100));
  EXPECT_TRUE(matches(g, "4.99999999999999"));    // 15 digits
  EXPECT_FALSE(matches(g, "4.999999999999999"));  // 16
  EXPECT_FALSE(matches(g, "4.9999999999999999999999999999"));
  std::mt19937 rng(9);
  for (const auto& [lo, hi] : std::vector<std::pair<std::optional<NumberBound>, std::optional<NumberBound>>>{
           {NumberBound{4}, NumberBound{5, true}},
           {NumberBound{-1, true}, NumberBound{0, true}},
           {NumberBound{9007199254740990}, NumberBound{9007199254740992, true}},
           {std::nullopt, NumberBound{-3, true}}}) {
    const auto walk = grammar_of(numbers_between(lo, hi, 100));
    for (int i = 0; i < 300; ++i) {
      const std::string text = random_match(walk, rng, 40, 3);
      ASSERT_FALSE(text.empty());
      ASSERT_TRUE(within(std::stod(text), lo, hi)) << text;
    }
  }
  EXPECT_THROW(numbers_between(NumberBound{0}, NumberBound{9007199254740993}, 100), Error);
  EXPECT_NO_THROW(integers_between(NumberBound{0}, NumberBound{9007199254740993}, 100));  // integers are exact
}

}  // namespace
}  // namespace qinfer::grammar
