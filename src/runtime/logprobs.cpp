#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qinfer {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int top_n) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  auto value = [](float x) { return std::isnan(x) ? kMinusInf : x; };
  TokenLogprobs out;
  out.id = chosen;
  const float chosen_value = value(logits[static_cast<size_t>(chosen)]);
  // One pass for the maximum, the rank and the n largest: the vocabulary is
  // read twice a call (here and for the sum), not once per quantity.
  const size_t n = std::min(static_cast<size_t>(std::max(top_n, 0)), logits.size());
  std::vector<std::pair<float, int32_t>> best;  // a min-heap of the n largest: (logit, id)
  auto worse = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  float max = kMinusInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = value(logits[i]);
    max = std::max(max, v);
    out.rank += v > chosen_value;
    if (best.size() < n) {
      best.emplace_back(v, static_cast<int32_t>(i));
      std::push_heap(best.begin(), best.end(), worse);
    } else if (n > 0 && v > best.front().first) {  // ids rise: an equal logit never displaces a kept one
      std::pop_heap(best.begin(), best.end(), worse);
      best.back() = {v, static_cast<int32_t>(i)};
      std::push_heap(best.begin(), best.end(), worse);
    }
  }
  double sum = 0;  // in double, one fixed order: the same row gives the same bits
  for (const float x : logits) sum += std::exp(static_cast<double>(value(x)) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](float v) { return static_cast<float>(static_cast<double>(v) - log_z); };
  out.logprob = logprob(chosen_value);
  std::sort(best.begin(), best.end(), worse);
  for (const auto& [v, id] : best) out.top.emplace_back(id, logprob(v));
  return out;
}

}  // namespace qinfer
