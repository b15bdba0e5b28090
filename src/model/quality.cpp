#include "model/quality.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace qinfer {

std::vector<float> teacher_forced_logits(const Qwen3Model& model, std::span<const int32_t> seq, bool decode,
                                         ThreadPool& pool) {
  KvCache cache = model.make_cache();
  ForwardState state;
  if (!decode) {
    auto logits = forward(model, seq, 0, cache, state, pool, true);
    return {logits.begin(), logits.end()};
  }
  std::vector<float> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    auto logits = forward(model, std::span(&seq[i], 1), static_cast<int64_t>(i), cache, state, pool);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

void LogitAgreement::add(const float* ref, const float* test, int64_t vocab) {
  // KL(p || q) = sum p (log p - log q) = sum p (ref - test) - log Zp + log Zq
  // with p = exp(ref) / Zp: one pass over the row, two exponentials per entry
  // and nothing stored (a row is the whole vocabulary).
  const int64_t best = std::max_element(ref, ref + vocab) - ref;
  const int64_t test_best = std::max_element(test, test + vocab) - test;
  const double ref_max = ref[best], test_max = test[test_best];
  double ref_z = 0, test_z = 0, p_diff = 0, sq = 0;
  float runner_up = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) {
    const double diff = static_cast<double>(ref[i]) - test[i];
    const double e = std::exp(ref[i] - ref_max);
    ref_z += e;
    test_z += std::exp(test[i] - test_max);
    p_diff += e * diff;
    sq += diff * diff;
    if (i != best) runner_up = std::max(runner_up, ref[i]);
  }
  const double kl = p_diff / ref_z - (ref_max + std::log(ref_z)) + (test_max + std::log(test_z));
  const bool agree = best == test_best;
  ++rows;
  top1_agree += agree;
  if (ref[best] - runner_up >= clear_margin) {
    ++clear_rows;
    clear_agree += agree;
  }
  kl_sum += kl;
  sq_error_sum += sq / static_cast<double>(vocab);
}

}  // namespace qinfer
