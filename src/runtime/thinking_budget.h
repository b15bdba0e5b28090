// vLLM's thinking_token_budget: a reply's reasoning (Qwen3's <think> block)
// holds at most this many ids; once it does, the next id is </think>, forced
// (every other gets a logit of -infinity), and the answer follows. Pure
// logic: the engine asks which id is forced before each draw and hands it
// each id drawn.
#pragma once
#include <cstdint>

namespace qinfer {

struct ThinkingBudget {
  int64_t tokens = -1;                  // -1: no budget
  int32_t open_id = -1, close_id = -1;  // <think>, </think>
  bool starts_open = false;             // the prompt left the block open
};

class ThinkingBudgetState {
 public:
  explicit ThinkingBudgetState(const ThinkingBudget& budget)
      : budget_(budget), inside_(budget.starts_open && budget.tokens >= 0) {}

  // The id the next draw must give (</think>), or -1 when it is free.
  int32_t forced() const { return inside_ && spent_ >= budget_.tokens ? budget_.close_id : -1; }

  void accept(int32_t id) {
    if (budget_.tokens < 0) return;
    if (!inside_) {
      inside_ = id == budget_.open_id;
    } else if (id == budget_.close_id) {
      inside_ = false;
    } else {
      ++spent_;  // every block of the reply counts against one budget
    }
  }

 private:
  ThinkingBudget budget_;
  bool inside_;
  int64_t spent_ = 0;
};

}  // namespace qinfer
