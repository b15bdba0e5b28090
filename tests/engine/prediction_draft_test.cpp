// Drafts from a request's prediction (OpenAI's predicted outputs): its start
// while the answer follows it, then the ids after the answer's last n ids
// where they occur in it, nearest after the previous draft; and the count of
// its ids rejected, each once.
#include "engine/prediction_draft.h"

#include <gtest/gtest.h>

#include <memory>

using namespace qinfer::engine;

namespace {

std::shared_ptr<const qinfer::Prediction> ids(std::vector<int32_t> v) {
  return std::make_shared<const qinfer::Prediction>(std::move(v));
}

std::vector<int32_t> propose(PredictionDraft& p, const std::vector<int32_t>& output, int64_t room = 1000) {
  std::vector<int32_t> draft = {99};  // replaced, never appended to
  const bool made = p.propose(output, room, draft);
  EXPECT_EQ(made, !draft.empty());
  return draft;
}

}  // namespace

TEST(PredictionDraft, AnAnswerStillOnItsPredictionDraftsWhatComesNext) {
  PredictionDraft p(ids({10, 11, 12, 13, 14, 15, 16}), 4);
  EXPECT_EQ(propose(p, {}), (std::vector<int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(propose(p, {10}), (std::vector<int32_t>{11, 12, 13, 14})) << "shorter than min_ngram: still its start";
  EXPECT_EQ(propose(p, {10, 11}, 2), (std::vector<int32_t>{12, 13})) << "the room caps it";
  EXPECT_EQ(propose(p, {10, 11, 12, 13, 14}), (std::vector<int32_t>{15, 16})) << "the prediction's end caps it";
  EXPECT_EQ(propose(p, {10, 11, 12, 13, 14, 15, 16}), std::vector<int32_t>{}) << "all of it is out";
  PredictionDraft off(ids({10, 11}), 0);
  EXPECT_EQ(propose(off, {}), std::vector<int32_t>{}) << "max_tokens 0: nothing";
  PredictionDraft empty(ids({}), 4);
  EXPECT_EQ(propose(empty, {}), std::vector<int32_t>{});
  EXPECT_EQ(propose(empty, {1, 2, 3}), std::vector<int32_t>{});
}

// An edit: the answer left the prediction and comes back to it; the
// occurrence of its last ids nearest after the previous draft wins.
TEST(PredictionDraft, AnAnswerThatLeftItPicksItUpAgainAfterThePreviousDraft) {
  //                      0   1   2  3  4  5   6   7  8  9  10  11
  const auto text = ids({20, 21, 1, 2, 3, 22, 23, 1, 2, 4, 24, 25});
  PredictionDraft p(text, 3);
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22}), (std::vector<int32_t>{23, 1, 2})) << "on its start: draft at 6";
  // The answer left it (30), then "1 2" (at 2 and 7): the one after the previous draft.
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22, 30, 1, 2}), (std::vector<int32_t>{4, 24, 25}));
  // "1 2" again, looked up from the previous draft's start less n (9 - 2): the one at 7 again.
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22, 30, 1, 2, 31, 1, 2}), (std::vector<int32_t>{4, 24, 25}));
  // A 3-gram that occurs beats a 2-gram: "21 1 2" only at 1.
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22, 30, 1, 2, 31, 21, 1, 2}), (std::vector<int32_t>{3, 22, 23}));
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22, 30, 1, 2, 31, 21, 1, 2, 3, 22, 23, 32, 24, 25}), std::vector<int32_t>{})
      << "its last ids end the prediction: nothing follows them";
  EXPECT_EQ(propose(p, {20, 21, 1, 2, 3, 22, 30, 1, 2, 31, 21, 1, 2, 3, 22, 23, 32, 24, 25, 40, 41}),
            std::vector<int32_t>{})
      << "nothing occurs";
  // Past the last occurrence after the previous draft, the first from the start.
  PredictionDraft q(text, 3);
  EXPECT_EQ(propose(q, {20, 21, 1, 2, 4, 24}), (std::vector<int32_t>{25}));  // drafts at 11
  EXPECT_EQ(propose(q, {20, 21, 1, 2, 4, 24, 50, 1, 2}), (std::vector<int32_t>{3, 22, 23}));
}

// The prediction's ids drafted and not confirmed count once each, until a
// later draft confirms them.
TEST(PredictionDraft, RejectedIdsCountOnceUntilConfirmed) {
  PredictionDraft p(ids({1, 2, 3, 4, 5, 6, 7, 8}), 4);
  EXPECT_EQ(propose(p, {1}), (std::vector<int32_t>{2, 3, 4, 5}));
  p.confirm(4, 2);  // 2 3 confirmed, 4 5 rejected
  EXPECT_EQ(p.rejected(), 2);
  EXPECT_EQ(propose(p, {1, 2, 3, 9}), std::vector<int32_t>{}) << "9 is not in it";
  EXPECT_EQ(propose(p, {1, 2, 3, 9, 3, 4}), (std::vector<int32_t>{5, 6, 7, 8}));
  p.confirm(4, 4);  // 5 now confirmed (no longer rejected), 6 7 8 too
  EXPECT_EQ(p.rejected(), 1) << "4 was rejected and never confirmed";
  EXPECT_EQ(propose(p, {1, 2, 3, 9, 3, 4, 5, 6, 7, 8, 0, 2, 3}), (std::vector<int32_t>{4, 5, 6, 7}));
  p.confirm(4, 1);  // 4 confirmed at last; 5 6 7 rejected this time but confirmed before
  EXPECT_EQ(p.rejected(), 0);
  p.confirm(0, 0);  // the scheduler ran no draft: nothing changes
  EXPECT_EQ(p.rejected(), 0);
}

// A prediction of 32k ids that nearly match everywhere: a draft is a lookup,
// not a scan (the test's time would show a scan per call under the sanitizers).
TEST(PredictionDraft, LongRepetitivePredictionsAreLookedUpNotScanned) {
  std::vector<int32_t> text(32768, 7);
  text.back() = 8;
  PredictionDraft p(ids(text), 16);
  std::vector<int32_t> output(4000, 7);
  output.push_back(5);  // off the prediction
  output.push_back(7);
  for (int i = 0; i < 2000; ++i) {
    output.push_back(7);
    EXPECT_EQ(propose(p, output).size(), 16u);
  }
  output.push_back(8);
  EXPECT_EQ(propose(p, output), std::vector<int32_t>{}) << "7 7 7 8 ends it";
}
