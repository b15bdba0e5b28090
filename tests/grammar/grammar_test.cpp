// The grammar builder and matcher: what a grammar accepts byte by byte, and
// the grammars build() refuses.
#include <gtest/gtest.h>

#include <memory>

#include "grammar/matching.h"
#include "text/grammar/grammar.h"
#include "text/grammar/matcher.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

std::shared_ptr<const Grammar> make(GrammarBuilder b, int32_t root) {
  return std::make_shared<const Grammar>(std::move(b).build(root));
}

bool is_prefix(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.advance(text);
}

TEST(Grammar, ByteClassReadsRangesAndSingleBytes) {
  ByteSet s = byte_class("a-c_x");
  EXPECT_EQ(s.count(), 5u);
  EXPECT_TRUE(s.test('a') && s.test('b') && s.test('c') && s.test('_') && s.test('x'));
  EXPECT_EQ(byte_class("-").count(), 1u);
  EXPECT_EQ(byte_class("\x80-\xff").count(), 128u);
}

TEST(Grammar, SequencesChoicesAndRepetitions) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  b.define(root, sequence({literal("ab"), choice({literal("c"), literal("de")}), repeat(bytes(byte_class("0-9")), 1, 3),
                           optional(literal("!"))}));
  auto g = make(std::move(b), root);
  EXPECT_TRUE(matches(g, "abc1"));
  EXPECT_TRUE(matches(g, "abde123!"));
  EXPECT_FALSE(matches(g, "abc"));      // at least one digit
  EXPECT_FALSE(matches(g, "abc1234"));  // at most three
  EXPECT_FALSE(matches(g, "abd1"));     // "d" needs "e"
  EXPECT_TRUE(is_prefix(g, "abd"));     // ... which may still come
  EXPECT_FALSE(is_prefix(g, "abx"));
  EXPECT_FALSE(matches(g, "abc1!!"));
}

TEST(Grammar, RecursiveRulesNest) {
  GrammarBuilder b;  // balanced parentheses
  const int32_t p = b.rule("p");
  b.define(p, star(sequence({literal("("), GrammarBuilder::ref(p), literal(")")})));
  auto g = make(std::move(b), p);
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "(()())()"));
  EXPECT_FALSE(matches(g, "(()"));
  EXPECT_TRUE(is_prefix(g, "((("));
  EXPECT_FALSE(is_prefix(g, "())"));
  std::string deep(5000, '(');
  deep += std::string(5000, ')');
  EXPECT_TRUE(matches(g, deep));
}

TEST(Grammar, RefusedAdvanceKeepsTheState) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  b.define(root, literal("yes"));
  Matcher m(make(std::move(b), root));
  EXPECT_TRUE(m.advance("y"));
  EXPECT_FALSE(m.advance("ex"));  // "e" fits, "x" does not: nothing consumed
  EXPECT_TRUE(m.allows("es"));
  EXPECT_FALSE(m.allows("s"));
  EXPECT_TRUE(m.advance("es"));
  EXPECT_TRUE(m.state().accepting);
  EXPECT_TRUE(m.state().stacks.empty());
}

TEST(Grammar, EqualStatesHaveEqualStacks) {
  GrammarBuilder b;  // "a"* "b": every state before "b" is the same
  const int32_t root = b.rule("root");
  b.define(root, sequence({star(literal("a")), literal("b")}));
  Matcher m(make(std::move(b), root));
  ASSERT_TRUE(m.advance("a"));
  const MatchState once = m.state();
  ASSERT_TRUE(m.advance("aaa"));
  EXPECT_EQ(m.state(), once);
}

TEST(Grammar, BuildRefusesUndefinedAndLeftRecursiveRules) {
  {
    GrammarBuilder b;
    const int32_t root = b.rule("root");
    b.define(root, b.ref("missing"));
    EXPECT_THROW(
        {
          try {
            std::move(b).build(root);
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
            throw;
          }
        },
        Error);
  }
  {
    GrammarBuilder b;  // expr ::= expr "+" "1" | "1"
    const int32_t e = b.rule("expr");
    b.define(e, choice({sequence({GrammarBuilder::ref(e), literal("+1")}), literal("1")}));
    EXPECT_THROW(std::move(b).build(e), Error);
  }
  {
    GrammarBuilder b;  // left recursion through a rule that can match nothing
    const int32_t a = b.rule("a"), n = b.rule("n");
    b.define(n, optional(literal("x")));
    b.define(a, choice({sequence({GrammarBuilder::ref(n), GrammarBuilder::ref(a), literal("y")}), literal("z")}));
    EXPECT_THROW(std::move(b).build(a), Error);
  }
  {
    GrammarBuilder b;  // a repetition too large to flatten
    const int32_t root = b.rule("root");
    b.define(root, repeat(literal("ab"), 0, 5000));
    EXPECT_THROW(std::move(b).build(root, 1000), Error);
  }
  {
    GrammarBuilder b;
    const int32_t root = b.rule("root");
    b.define(root, literal("a"));
    EXPECT_THROW(b.define(root, literal("b")), Error);
  }
}

TEST(Grammar, TooAmbiguousGrammarsAreAnError) {
  GrammarBuilder b;  // ("a" | "a" | ...)* with the stacks multiplying
  const int32_t root = b.rule("root");
  std::vector<Expr> alts;
  for (int i = 0; i < 40; ++i) alts.push_back(sequence({literal("a"), repeat(literal("a"), 0, 40)}));
  b.define(root, star(choice(std::move(alts))));
  Matcher m(make(std::move(b), root), 64);
  EXPECT_THROW(m.advance("aaaa"), Error);
}

// A step reads every stack of the state it starts from, matched or not: a
// choice among many words sharing a prefix costs that much per byte tried,
// and budgets (token masks) must see it.
TEST(Grammar, WorkCountsEveryStackAStepReads) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  std::vector<Expr> words;
  for (int i = 0; i < 1000; ++i) words.push_back(literal("item" + std::to_string(i)));
  b.define(root, choice(std::move(words)));
  Matcher m(make(std::move(b), root));
  ASSERT_TRUE(m.advance("item"));
  ASSERT_EQ(m.state().stacks.size(), 1000u);
  const uint64_t before = m.work();
  EXPECT_FALSE(m.allows("x"));  // no stack takes it: nothing expands
  EXPECT_GE(m.work() - before, 1000u);
}

}  // namespace
}  // namespace qinfer::grammar
