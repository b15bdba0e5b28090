// vLLM's thinking_token_budget as a state machine: which id is forced after
// which ids.
#include "runtime/thinking_budget.h"

#include <gtest/gtest.h>

#include <vector>

namespace qinfer {
namespace {

constexpr int32_t kOpen = 10, kClose = 11;

// The forced id before each of `ids` (-1: free), the ids drawn as given.
std::vector<int32_t> forced_before_each(const ThinkingBudget& budget, const std::vector<int32_t>& ids) {
  ThinkingBudgetState state(budget);
  std::vector<int32_t> forced;
  for (int32_t id : ids) {
    forced.push_back(state.forced());
    state.accept(id);
  }
  forced.push_back(state.forced());
  return forced;
}

TEST(ThinkingBudget, ForcesTheCloseOnceTheBlockHoldsTheBudget) {
  const std::vector<int32_t> reply = {kOpen, 1, 2, kClose, 3};
  EXPECT_EQ(forced_before_each({2, kOpen, kClose, false}, reply), (std::vector<int32_t>{-1, -1, -1, kClose, -1, -1}));
  EXPECT_EQ(forced_before_each({0, kOpen, kClose, false}, {kOpen, kClose, 3}),
            (std::vector<int32_t>{-1, kClose, -1, -1}));
  // No budget: nothing forced, ever.
  EXPECT_EQ(forced_before_each({-1, kOpen, kClose, true}, {1, 2, 3}), (std::vector<int32_t>{-1, -1, -1, -1}));
  // The prompt left the block open: its first ids count.
  EXPECT_EQ(forced_before_each({1, kOpen, kClose, true}, {1, kClose, 3}), (std::vector<int32_t>{-1, kClose, -1, -1}));
  // A reply that never opens one is free; a second block spends what is left.
  EXPECT_EQ(forced_before_each({1, kOpen, kClose, false}, {1, 2, 3}), (std::vector<int32_t>{-1, -1, -1, -1}));
  EXPECT_EQ(forced_before_each({2, kOpen, kClose, false}, {kOpen, 1, kClose, kOpen, 2}),
            (std::vector<int32_t>{-1, -1, -1, -1, -1, kClose}));
}

}  // namespace
}  // namespace qinfer
