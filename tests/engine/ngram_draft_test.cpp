// Prompt-lookup drafts: the ids after the latest earlier match of the longest
// recurring suffix, copied past the end of the sequence where the match runs
// into it, capped, and nothing where no suffix recurs.
#include "engine/ngram_draft.h"

#include <gtest/gtest.h>

#include "util/error.h"

using namespace qinfer::engine;

namespace {

std::vector<int32_t> draft_of(const std::vector<int32_t>& ids, NgramDraftOptions o, int64_t room = 1000) {
  std::vector<int32_t> draft = {99};  // replaced, never appended to
  ngram_draft(ids, o, room, draft);
  return draft;
}

}  // namespace

TEST(NgramDraft, CopiesWhatFollowedTheLatestMatchOfTheLongestSuffix) {
  const NgramDraftOptions o{3, 1, 3};
  // "5 6" recurs at 1 (then 7 8 9) and at 6 (then 1 2 3): the latest wins.
  EXPECT_EQ(draft_of({4, 5, 6, 7, 8, 9, 5, 6, 1, 2, 3, 0, 5, 6}, o), (std::vector<int32_t>{1, 2, 3}));
  // "6" alone recurs later (at 9, then 4), but "5 6" is longer and wins.
  EXPECT_EQ(draft_of({5, 6, 7, 8, 9, 3, 6, 4, 4, 4, 0, 5, 6}, o), (std::vector<int32_t>{7, 8, 9}));
  // Only the last id recurs: a 1-gram draft, going on as the copy repeats.
  EXPECT_EQ(draft_of({1, 2, 3, 9, 3}, o), (std::vector<int32_t>{9, 3, 9}));
  EXPECT_EQ(draft_of({1, 2, 3, 9, 3}, {3, 2, 3}), std::vector<int32_t>{}) << "min_ngram 2: no 2-gram recurs";
  EXPECT_EQ(draft_of({1, 2, 3, 4}, o), std::vector<int32_t>{}) << "nothing recurs";
  EXPECT_EQ(draft_of({7}, o), std::vector<int32_t>{});
  EXPECT_EQ(draft_of({}, o), std::vector<int32_t>{});
}

TEST(NgramDraft, ARepeatingTailDraftsWholeAsLz77Copies) {
  // Period 1: the match one back runs into the suffix; the copy goes on with itself.
  EXPECT_EQ(draft_of({3, 7, 7, 7}, {5, 1, 2}), (std::vector<int32_t>{7, 7, 7, 7, 7}));
  // Period 3: a b c a b c a b -> c a b c.
  EXPECT_EQ(draft_of({1, 2, 3, 1, 2, 3, 1, 2}, {4, 1, 3}), (std::vector<int32_t>{3, 1, 2, 3}));
}

TEST(NgramDraft, TheRoomAndTheOptionsCapIt) {
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 1, 2};
  EXPECT_EQ(draft_of(ids, {2, 1, 4}), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(draft_of(ids, {8, 1, 4}, 3), (std::vector<int32_t>{3, 4, 5})) << "the room left in the request";
  EXPECT_EQ(draft_of(ids, {8, 1, 4}, 0), std::vector<int32_t>{});
  EXPECT_EQ(draft_of(ids, {0, 1, 4}), std::vector<int32_t>{}) << "max_tokens 0: off";
}

TEST(NgramDraft, OptionsOutOfRangeAreNamed) {
  EXPECT_NO_THROW(validate({0, 1, 4}));
  EXPECT_NO_THROW(validate({1024, 1024, 1024}));
  auto message = [](NgramDraftOptions o) {
    try {
      validate(o);
    } catch (const qinfer::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({-1, 1, 4}).find("draft tokens must be between 0 (off) and 1024, got -1"), std::string::npos);
  EXPECT_NE(message({1025, 1, 4}).find("got 1025"), std::string::npos);
  EXPECT_NE(message({4, 0, 4}).find("shortest n-gram"), std::string::npos);
  EXPECT_NE(message({4, 3, 2}).find("longest n-gram to look up must be between the shortest (3)"), std::string::npos);
}
