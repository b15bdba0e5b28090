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
  auto log_softmax = [vocab](const float* x, std::vector<double>& out) {
    const double mx = *std::max_element(x, x + vocab);
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(x[i] - mx);
    const double log_z = mx + std::log(sum);
    out.resize(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) out[i] = x[i] - log_z;
  };
  std::vector<double> lp, lq;
  log_softmax(ref, lp);
  log_softmax(test, lq);
  double kl = 0, sq = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    sq += (static_cast<double>(ref[i]) - test[i]) * (static_cast<double>(ref[i]) - test[i]);
  }
  const int64_t best = std::max_element(ref, ref + vocab) - ref;
  float runner_up = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i)
    if (i != best) runner_up = std::max(runner_up, ref[i]);
  const bool agree = best == std::max_element(test, test + vocab) - test;
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
