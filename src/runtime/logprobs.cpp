#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qinfer {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int top_n) {
  auto value = [&](size_t i) { return std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i]; };
  float max = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) max = std::max(max, value(i));
  double sum = 0;  // in double, one fixed order: the same row gives the same bits
  for (size_t i = 0; i < logits.size(); ++i) sum += std::exp(static_cast<double>(value(i)) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](size_t i) { return static_cast<float>(static_cast<double>(value(i)) - log_z); };

  TokenLogprobs out;
  out.id = chosen;
  out.logprob = logprob(static_cast<size_t>(chosen));
  const float chosen_value = value(static_cast<size_t>(chosen));
  for (size_t i = 0; i < logits.size(); ++i) out.rank += value(i) > chosen_value;
  const size_t n = std::min(static_cast<size_t>(std::max(top_n, 0)), logits.size());
  std::vector<std::pair<float, int32_t>> best;  // a min-heap of the n largest: (logit, id)
  auto worse = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (size_t i = 0; i < logits.size() && n > 0; ++i) {
    const std::pair<float, int32_t> x{value(i), static_cast<int32_t>(i)};
    if (best.size() < n) {
      best.push_back(x);
      std::push_heap(best.begin(), best.end(), worse);
    } else if (worse(x, best.front())) {
      std::pop_heap(best.begin(), best.end(), worse);
      best.back() = x;
      std::push_heap(best.begin(), best.end(), worse);
    }
  }
  std::sort(best.begin(), best.end(), worse);
  for (const auto& [v, id] : best) out.top.emplace_back(id, logprob(static_cast<size_t>(id)));
  return out;
}

}  // namespace qinfer
