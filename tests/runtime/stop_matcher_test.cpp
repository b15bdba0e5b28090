#include "runtime/stop_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "util/error.h"

namespace qinfer {
namespace {

struct Streamed {
  std::vector<std::string> emits;  // one per push
  std::string text;                // everything emitted, flush included
  bool stopped = false;
};

Streamed stream(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopMatcher matcher(std::move(stops));
  Streamed out;
  for (const std::string& piece : pieces) {
    StopMatcher::Result r = matcher.push(piece);
    out.emits.push_back(r.emit);
    out.text += r.emit;
    out.stopped = r.stopped;
  }
  out.text += matcher.flush();
  return out;
}

std::vector<std::string> bytes_of(const std::string& text) {
  std::vector<std::string> pieces;
  for (char c : text) pieces.push_back(std::string(1, c));
  return pieces;
}

// Independent definition: the text before the stop string that ends first
// after byte `passed` (the first in the list if several end at the same
// byte, as vLLM breaks ties), or all of it.
std::string reference_output(const std::string& text, const std::vector<std::string>& stops, bool* stopped,
                             size_t passed = 0) {
  for (size_t end = passed + 1; end <= text.size(); ++end)
    for (const std::string& s : stops)
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0) {
        *stopped = true;
        return text.substr(0, end - s.size());
      }
  *stopped = false;
  return text;
}

TEST(StopMatcher, NoStopsPassesEveryPieceThrough) {
  Streamed out = stream({}, {"Hello", ", ", "world", "<"});
  EXPECT_EQ(out.emits, (std::vector<std::string>{"Hello", ", ", "world", "<"}));
  EXPECT_EQ(out.text, "Hello, world<");
  EXPECT_FALSE(out.stopped);
}

TEST(StopMatcher, StopSplitOverManyPiecesIsNotEmitted) {
  Streamed out = stream({"</end>"}, bytes_of("Hello</end>World"));
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "Hello");
  // Nothing of the stop string ever left the matcher.
  for (size_t i = 5; i < out.emits.size(); ++i) EXPECT_EQ(out.emits[i], "") << i;
}

TEST(StopMatcher, HoldsBackOnlyWhatCouldStartAStop) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("Hel").emit, "Hel");
  EXPECT_EQ(m.push("lo <").emit, "lo ");
  EXPECT_EQ(m.push("/").emit, "");
  StopMatcher::Result r = m.push("x>");  // "</x>" is no stop: all released
  EXPECT_EQ(r.emit, "</x>");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.push("a</").emit, "a");
  EXPECT_EQ(m.flush(), "</");  // end of generation releases the rest
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, RepeatedPrefixCharacters) {
  Streamed out = stream({"aab"}, {"a", "a", "a", "b", "c"});
  EXPECT_EQ(out.emits, (std::vector<std::string>{"", "", "a", "", ""}));
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "a");
}

TEST(StopMatcher, StopAtTheVeryStart) {
  Streamed out = stream({"###"}, {"###", "after"});
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "");
  Streamed split = stream({"###"}, {"#", "##x"});
  EXPECT_TRUE(split.stopped);
  EXPECT_EQ(split.text, "");
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"\n\n"});
  StopMatcher::Result r = m.push("line one\n\nline two");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "line one");
  // Once stopped, nothing more comes out.
  r = m.push("more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(m.flush(), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, OverlappingCandidates) {
  // "ab" completes before "abc" could.
  EXPECT_EQ(stream({"abc", "ab"}, bytes_of("xabcx")).text, "x");
  EXPECT_EQ(stream({"ab", "abc"}, {"xabcx"}).text, "x");
  // The stop that ends first wins even if another began earlier.
  EXPECT_EQ(stream({"abcd", "bc"}, {"abcd"}).text, "a");
  EXPECT_EQ(stream({"abcd", "bc"}, {"ab", "cd"}).text, "a");
  // Both end at the same byte: the first listed is removed (a hunt finding: the longer one was; vLLM's
  // tie-break is the list's order).
  EXPECT_EQ(stream({"c", "abc"}, {"xabc"}).text, "xab");
  EXPECT_EQ(stream({"c", "abc"}, bytes_of("xabc")).text, "xab");
  EXPECT_EQ(stream({"abc", "c"}, bytes_of("xabc")).text, "x");
  // A held-back prefix of one stop turns out to be the start of another.
  Streamed out = stream({"abx", "bc"}, {"a", "b", "c"});
  EXPECT_EQ(out.text, "a");
  EXPECT_TRUE(out.stopped);
}

TEST(StopMatcher, MultibyteUtf8) {
  const std::string text = "答えは４２です。終わり残り";
  // Split into single bytes: pieces cut through characters.
  Streamed out = stream({"終わり"}, bytes_of(text));
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "答えは４２です。");
  // ぜ is E3 81 9C and す is E3 81 99: the first two bytes of す are held
  // back as a possible ぜ, then released whole.
  Streamed other = stream({"ぜ"}, {"で", "\xE3\x81", "\x99。"});
  EXPECT_FALSE(other.stopped);
  EXPECT_EQ(other.emits, (std::vector<std::string>{"で", "", "す。"}));
  EXPECT_EQ(other.text, "です。");
}

TEST(StopMatcher, EmptyStopStringIsAnError) { EXPECT_THROW(StopMatcher({"ok", ""}), Error); }

TEST(StopMatcher, ResultDoesNotDependOnHowTheTextIsSplit) {
  const std::vector<std::string> stops = {"ab", "abc", "bca", "cc", "cabab"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    size_t length = rng() % 12;
    for (size_t i = 0; i < length; ++i) text += "abcx"[rng() % 4];
    std::vector<std::string> pieces;
    for (size_t pos = 0; pos < text.size();) {
      size_t n = std::min<size_t>(text.size() - pos, rng() % 4);  // empty pieces too
      pieces.push_back(text.substr(pos, n));
      pos += n;
    }
    bool want_stopped = false;
    std::string want = reference_output(text, stops, &want_stopped);
    Streamed got = stream(stops, pieces);
    ASSERT_EQ(got.text, want) << "text " << text << ", trial " << trial;
    ASSERT_EQ(got.stopped, want_stopped) << "text " << text;
  }
}

// vLLM's min_tokens: a stop string ending in text pushed with may_stop
// false does not count (its text passes on); one that ends later does, even
// when it began in that text. The result names the stop string.
TEST(StopMatcher, StopsEndingInTextThatMayNotStopDoNotCount) {
  StopMatcher m({"\n", "ab"});
  StopMatcher::Result r = m.push("x\ny", false);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.emit, "x\ny");
  r = m.push("a", false);
  EXPECT_EQ(r.emit, "");  // held back: "ab" may still end later
  r = m.push("bc\n", true);
  EXPECT_TRUE(r.stopped);  // "ab" ends in text that may stop
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(r.stop, "ab");

  StopMatcher late({"\n"});
  EXPECT_FALSE(late.push("1\n2\n", false).stopped);
  r = late.push("3\n4", true);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "3");
  EXPECT_EQ(r.stop, "\n");
  EXPECT_EQ(late.flush(), "");
}

// Against the reference with the first k bytes unable to stop, at every split.
TEST(StopMatcher, MayStopMatchesTheReferenceFromThatByteOn) {
  const std::vector<std::string> stops = {"ab", "abc", "bca", "cc", "cabab"};
  std::mt19937 rng(9);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    for (size_t i = rng() % 12; i > 0; --i) text += "abcx"[rng() % 4];
    const size_t passed = text.empty() ? 0 : rng() % (text.size() + 1);
    bool want_stopped = false;
    const std::string want = reference_output(text, stops, &want_stopped, passed);
    StopMatcher m(stops);
    std::string got;
    bool stopped = false;
    for (size_t pos = 0; pos < text.size() && !stopped;) {
      // Pieces never straddle `passed`: it is where a token's text ends.
      const size_t limit = pos < passed ? passed : text.size();
      const size_t n = std::min<size_t>(limit - pos, 1 + rng() % 3);
      const StopMatcher::Result r = m.push(text.substr(pos, n), pos >= passed);
      got += r.emit;
      stopped = r.stopped;
      pos += n;
    }
    if (!stopped) got += m.flush();
    ASSERT_EQ(got, want) << "text " << text << ", passed " << passed;
    ASSERT_EQ(stopped, want_stopped) << "text " << text << ", passed " << passed;
  }
}

}  // namespace
}  // namespace qinfer
