// Token masks from the trie walk against the plain definition: token t is
// allowed when the matcher allows all of its bytes.
#include "text/grammar/token_trie.h"

#include <gtest/gtest.h>

#include <memory>

#include "text/grammar/gbnf.h"
#include "text/grammar/json_grammar.h"
#include "text/tokenizer.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::grammar {
namespace {

std::vector<uint64_t> brute_force(Matcher& m, const std::vector<std::string>& vocab) {
  std::vector<uint64_t> bits((vocab.size() + 63) / 64, 0);
  for (size_t id = 0; id < vocab.size(); ++id)
    if (!vocab[id].empty() && m.allows(vocab[id])) bits[id / 64] |= uint64_t{1} << (id % 64);
  return bits;
}

size_t count(const std::vector<uint64_t>& bits) {
  size_t n = 0;
  for (uint64_t w : bits) n += static_cast<size_t>(__builtin_popcountll(w));
  return n;
}

TEST(TokenTrie, SmallVocabularyMatchesTheDefinition) {
  const std::vector<std::string> vocab = {"{", "{\"", "\"",  "a", "ab",  "ab",  "\":",  "}",    "",         " ",
                                          "1", "12",  "\"}", ":", ":\"", "x\"", "\xc3", "\xa9", "\xc3\xa9", "}}"};
  TokenTrie trie(vocab);
  Matcher m(std::make_shared<const Grammar>(json_object_grammar()));
  std::vector<uint64_t> mask;
  for (const char* step : {"", "{", "\"", "ab", "\"", ":", " ", "\"", "\xc3", "\xa9", "\"", "}"}) {
    ASSERT_TRUE(m.advance(step)) << step;
    trie.allowed(m, mask);
    EXPECT_EQ(mask, brute_force(m, vocab)) << "after " << step;
  }
  // The object is closed: nothing may follow.
  EXPECT_EQ(count(mask), 0u);
  EXPECT_TRUE(m.state().accepting);
}

std::vector<std::string> qwen3_vocab() {
  Tokenizer tok = Tokenizer::from_file(std::string(QINFER_TEST_DATA) + "/tokenizer.json");
  std::vector<std::string> vocab(tok.vocab_size());
  for (size_t id = 0; id < vocab.size(); ++id)
    if (!tok.is_special(static_cast<int32_t>(id))) vocab[id] = std::string(tok.token_bytes(static_cast<int32_t>(id)));
  return vocab;
}

TEST(TokenTrie, Qwen3VocabularyMatchesTheDefinition) {
  const std::vector<std::string> vocab = qwen3_vocab();
  TokenTrie trie(vocab);
  Matcher m(std::make_shared<const Grammar>(json_object_grammar()));
  std::vector<uint64_t> mask;
  for (const char* step : {"", "{\"", "na", "me\": ", "12", ", \"x\": [\"\\u00e"}) {
    ASSERT_TRUE(m.advance(step)) << step;
    Timer t;
    const uint64_t work = m.work();
    trie.allowed(m, mask);
    const double walk = t.seconds();
    const uint64_t walk_work = m.work() - work;
    EXPECT_EQ(mask, brute_force(m, vocab)) << "after " << step;
    std::printf("after '%s': %zu tokens allowed, walk %.2f ms, %llu expansions\n", step, count(mask), walk * 1e3,
                static_cast<unsigned long long>(walk_work));
  }
}

// A long enum: the walk's states follow the bytes of the words, more than its
// table of steps holds (4096), and the masks still match the definition.
TEST(TokenTrie, ManyDistinctStatesMatchTheDefinition) {
  // The tokens of the words' bytes only: the others are refused at once, and
  // the definition (every token's bytes through the matcher) stays cheap.
  std::vector<std::string> vocab = qwen3_vocab();
  for (std::string& t : vocab)
    if (t.find_first_not_of("etaoins0123456789\"\\u[],") != std::string::npos) t.clear();
  TokenTrie trie(vocab);
  nlohmann::ordered_json words = nlohmann::ordered_json::array();
  for (int i = 0; i < 3000; ++i) {
    std::string w;
    for (int k = i; k > 0 || w.empty(); k /= 7) w += "etaoins"[k % 7];
    words.push_back(w + std::to_string(i % 13) + "\u00e9");
  }
  Matcher m(std::make_shared<const Grammar>(json_schema_grammar({{"type", "array"}, {"items", {{"enum", words}}}})));
  std::vector<uint64_t> mask;
  for (const char* step : {"[", "\"", "ta", "o"}) {
    ASSERT_TRUE(m.advance(step)) << step;
    trie.allowed(m, mask);
    EXPECT_EQ(mask, brute_force(m, vocab)) << "after " << step;
  }
}

TEST(TokenTrie, AMaskPastItsWorkBudgetIsAnError) {
  const std::vector<std::string> vocab = {"a", "ab", "abc", "b", "\"", "x"};
  TokenTrie trie(vocab);
  Matcher m(std::make_shared<const Grammar>(json_object_grammar()));
  ASSERT_TRUE(m.advance("{\""));
  std::vector<uint64_t> mask;
  EXPECT_THROW(trie.allowed(m, mask, 10), Error);
  const size_t nodes = m.mark();
  trie.allowed(m, mask);       // the matcher is intact
  EXPECT_EQ(count(mask), 6u);  // inside a string every one may come
  EXPECT_EQ(m.mark(), nodes);
}

// The default budget against what it must let through and what it must stop.
// Legal but ambiguous: hundreds of optional letters in a row leave as many
// stacks after every letter, and a mask cost ~50 ms (600 of them, Zen 5)
// under the earlier budget of 8M expansions, which let 3000 of them cost
// 0.5 s a token: the whole batch waits on each draw. The costliest masks of
// real schemas (inside a "format": "uri" string, a 3000-word enum) stay well
// inside it.
TEST(TokenTrie, TheDefaultBudgetStopsLongAmbiguousChainsAndPassesRealSchemas) {
  const std::vector<std::string> vocab = qwen3_vocab();
  TokenTrie trie(vocab);
  std::vector<uint64_t> mask;
  auto walk_work = [&](Matcher& m) {
    const uint64_t before = m.work();
    EXPECT_NO_THROW(trie.allowed(m, mask));
    return m.work() - before;
  };
  std::string chain = "root ::=";
  for (int i = 0; i < 600; ++i) chain += " r";
  Matcher ambiguous(std::make_shared<const Grammar>(gbnf_grammar(chain + "\nr ::= [a-z]?\n")));
  EXPECT_THROW(trie.allowed(ambiguous, mask), Error);

  Matcher uri(std::make_shared<const Grammar>(json_schema_grammar({{"type", "string"}, {"format", "uri"}})));
  ASSERT_TRUE(uri.advance("\"https://example.com/a"));
  const uint64_t uri_work = walk_work(uri);
  EXPECT_GT(count(mask), 1000u);

  nlohmann::ordered_json words = nlohmann::ordered_json::array();
  for (int i = 0; i < 3000; ++i) words.push_back("item" + std::to_string(i));
  Matcher choice(std::make_shared<const Grammar>(json_schema_grammar({{"enum", words}})));
  ASSERT_TRUE(choice.advance("\"item"));
  const uint64_t choice_work = walk_work(choice);
  EXPECT_EQ(count(mask), 10u);  // the digits (Qwen3 has no token of two)
  std::printf("mask work: uri %llu, 3000-word enum %llu\n", static_cast<unsigned long long>(uri_work),
              static_cast<unsigned long long>(choice_work));
}

}  // namespace
}  // namespace qinfer::grammar
