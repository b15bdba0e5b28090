// Log-probabilities of the model's next-token distribution, as OpenAI's
// `logprobs` reports them: log softmax of the raw logits (before penalties,
// temperature or truncation, as vLLM reports them by default) for the token
// drawn and for the most likely ones. Pure logic over one logits row.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace qinfer {

struct TokenLogprobs {
  int32_t id = 0;
  float logprob = 0;
  int64_t rank = 1;  // 1 + how many tokens are more likely (vLLM's rank; NaN logits count as -infinity)
  std::vector<std::pair<int32_t, float>> top;  // most likely first, lowest id first on ties
};

// NaN logits count as -infinity; top_n = 0 gives the chosen token's alone.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int top_n);

}  // namespace qinfer
