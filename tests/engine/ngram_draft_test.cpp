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

namespace {

struct PredictionDraft {
  std::vector<int32_t> draft;
  int64_t at;
};

PredictionDraft predicted(const std::vector<int32_t>& output, const std::vector<int32_t>& prediction, int64_t hint = 0,
                          NgramDraftOptions o = {4, 2, 3}, int64_t room = 1000) {
  PredictionDraft d{{99}, 0};  // replaced, never appended to
  d.at = prediction_draft(output, prediction, o, room, hint, d.draft);
  return d;
}

}  // namespace

// OpenAI's predicted outputs: the answer is expected to follow its prediction.
TEST(PredictionDraft, AnAnswerStillOnItsPredictionDraftsWhatComesNext) {
  const std::vector<int32_t> p = {10, 11, 12, 13, 14, 15, 16};
  auto r = predicted({}, p);
  EXPECT_EQ(r.draft, (std::vector<int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(r.at, 0);
  r = predicted({10}, p);  // shorter than min_ngram: still the prefix
  EXPECT_EQ(r.draft, (std::vector<int32_t>{11, 12, 13, 14}));
  EXPECT_EQ(r.at, 1);
  r = predicted({10, 11, 12, 13, 14}, p);
  EXPECT_EQ(r.draft, (std::vector<int32_t>{15, 16})) << "the prediction's end caps it";
  EXPECT_EQ(r.at, 5);
  r = predicted(p, p, 5);
  EXPECT_EQ(r.draft, std::vector<int32_t>{}) << "the whole prediction is out: nothing left";
  EXPECT_EQ(r.at, 5);
  EXPECT_EQ(predicted({}, p, 0, {4, 2, 3}, 2).draft, (std::vector<int32_t>{10, 11})) << "the room caps it";
  EXPECT_EQ(predicted({}, p, 0, {0, 2, 3}).draft, std::vector<int32_t>{}) << "max_tokens 0: nothing";
  EXPECT_EQ(predicted({}, {}).draft, std::vector<int32_t>{});
}

// An edit: the answer left the prediction (a changed line) and comes back
// to it; the occurrence of its last ids nearest after the previous draft wins.
TEST(PredictionDraft, AnAnswerThatLeftItPicksItUpAgainAfterThePreviousDraft) {
  //                                0   1   2  3  4  5   6   7  8  9  10
  const std::vector<int32_t> p = {20, 21, 1, 2, 3, 22, 23, 1, 2, 4, 24};
  // "1 2" occurs at 2 and 7: from hint 0 the first, from hint 8 the one at 7.
  EXPECT_EQ(predicted({30, 1, 2}, p, 0).draft, (std::vector<int32_t>{3, 22, 23, 1}));
  EXPECT_EQ(predicted({30, 1, 2}, p, 0).at, 4);
  EXPECT_EQ(predicted({30, 1, 2}, p, 8).draft, (std::vector<int32_t>{4, 24}));
  EXPECT_EQ(predicted({30, 1, 2}, p, 8).at, 9);
  // max_ngram 3 tries "31 2 4" first (absent), then "2 4" (at 8).
  EXPECT_EQ(predicted({31, 2, 4}, p, 0).draft, (std::vector<int32_t>{24}));
  // Past the last occurrence after the hint, the search starts over from the beginning.
  EXPECT_EQ(predicted({30, 1, 2}, p, 10).draft, (std::vector<int32_t>{3, 22, 23, 1}));
  // A match at the very end is followed by nothing: no draft, the hint kept.
  EXPECT_EQ(predicted({30, 4, 24}, p, 3).draft, std::vector<int32_t>{});
  EXPECT_EQ(predicted({30, 4, 24}, p, 3).at, 3);
  EXPECT_EQ(predicted({30, 31, 32}, p, 6).at, 6) << "no suffix occurs";
  EXPECT_EQ(predicted({30, 31, 32}, p, 6).draft, std::vector<int32_t>{});
}
