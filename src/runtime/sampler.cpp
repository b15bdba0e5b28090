// The selection logic over spans of logits; the passes over the whole
// vocabulary are SIMD kernels in ops/sampling.h.
#include "runtime/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/sampling.h"
#include "util/error.h"

namespace qinfer {
namespace {
using namespace sampling;

double sum_weights(std::span<const float> w) { return mass_at_least(w, 0.0f); }

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Top-p groups the weights, all in (0, 1], into buckets by their float bit
// pattern: for positive floats the bits grow with the value, so every weight
// of bucket b is larger than every weight of bucket b + 1. Keeping 4 mantissa
// bits, a bucket spans a factor of at most 1 + 1/16, and there are 2032.
constexpr int kBucketShift = 19;
constexpr uint32_t kOneBits = 0x3F800000u;  // bit pattern of 1.0f
constexpr size_t kBucketCount = kOneBits >> kBucketShift;

size_t bucket_of(float weight) { return (kOneBits - std::bit_cast<uint32_t>(weight)) >> kBucketShift; }

// The order of the filtered distribution: larger first, lower id on ties.
bool ranks_before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

void check_param(bool ok, const char* name, float value, const char* allowed) {
  if (!ok) fail("sampling parameter ", name, " = ", value, " is out of range (", allowed, ")");
}

}  // namespace

Sampler::Sampler(SamplingParams params, size_t vocab_size)
    : params_(std::move(params)), vocab_size_(vocab_size), rng_(params_.seed) {
  if (vocab_size == 0 || vocab_size > size_t(std::numeric_limits<int32_t>::max()))
    fail("sampler: vocabulary size ", vocab_size, " is out of range");
  const SamplingParams& p = params_;
  check_param(std::isfinite(p.temperature) && p.temperature >= 0, "temperature", p.temperature,
              "finite, >= 0; 0 = greedy");
  check_param(p.top_k >= 0, "top_k", float(p.top_k), ">= 0; 0 = off");
  check_param(p.top_p > 0 && p.top_p <= 1, "top_p", p.top_p, "(0, 1]; 1 = off");
  check_param(p.min_p >= 0 && p.min_p <= 1, "min_p", p.min_p, "[0, 1]; 0 = off");
  check_param(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0, "repetition_penalty",
              p.repetition_penalty, "finite, > 0; 1 = off");
  check_param(std::isfinite(p.presence_penalty), "presence_penalty", p.presence_penalty, "finite");
  check_param(std::isfinite(p.frequency_penalty), "frequency_penalty", p.frequency_penalty, "finite");
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || size_t(id) >= vocab_size)
      fail("sampler: logit_bias token id ", id, " is outside the vocabulary (size ", vocab_size, ")");
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity())
      fail("sampler: logit_bias of token ", id, " is ", bias, " (must be finite or -inf)");
  }
  top_k_on_ = p.top_k > 0 && size_t(p.top_k) < vocab_size;
  if (p.repetition_penalty != 1 || p.presence_penalty != 0 || p.frequency_penalty != 0)
    token_counts_.assign(vocab_size, 0);
  bucket_mass_.resize(kBucketCount);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len,
                        TokenFilter* filter) {
  int32_t argmax = prepare_logits(logits, history, prompt_len);
  if (filter && !(params_.temperature == 0 && filter->allows(argmax))) {
    filter->mask(logits);
    const float max = sanitize_max(logits);
    if (max == kNegInf) fail("sampler: the output's grammar allows no token that has a finite logit");
    argmax = int32_t(find_first_at_least(logits, 0, max));
  }
  if (params_.temperature == 0) return argmax;
  select_candidates(logits, logits[argmax]);

  std::span<const float> weights = candidates_.weights;
  // 53 random bits -> uniform in [0, 1), the same on every platform (unlike
  // std::uniform_real_distribution).
  double u = double(rng_() >> 11) * 0x1.0p-53 * sum_weights(weights);
  // Skip whole blocks by their sums, then walk the block holding u.
  constexpr size_t kBlock = 256;
  double cumulative = 0;
  size_t i = 0;
  for (; i + kBlock <= weights.size(); i += kBlock) {
    double block = sum_weights(weights.subspan(i, kBlock));
    if (u < cumulative + block) break;
    cumulative += block;
  }
  for (; i < weights.size(); ++i) {
    cumulative += weights[i];
    if (u < cumulative) return candidates_.ids[i];
  }
  return candidates_.ids.back();  // u rounded up to the total
}

std::vector<TokenProb> Sampler::distribution(std::span<float> logits, std::span<const int32_t> history,
                                             size_t prompt_len) {
  int32_t argmax = prepare_logits(logits, history, prompt_len);
  if (params_.temperature == 0) return {{argmax, 1.0}};
  select_candidates(logits, logits[argmax]);

  double total = sum_weights(candidates_.weights);
  std::vector<TokenProb> probs;
  probs.reserve(candidates_.ids.size());
  for (size_t i = 0; i < candidates_.ids.size(); ++i)
    probs.push_back({candidates_.ids[i], candidates_.weights[i] / total});
  std::sort(probs.begin(), probs.end(), [](const TokenProb& a, const TokenProb& b) {
    return a.prob > b.prob || (a.prob == b.prob && a.id < b.id);
  });
  return probs;
}

int32_t Sampler::prepare_logits(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len) {
  if (logits.size() != vocab_size_) fail("sampler: got ", logits.size(), " logits for a vocabulary of ", vocab_size_);
  if (prompt_len > history.size())
    fail("sampler: prompt length ", prompt_len, " exceeds the history length ", history.size());
  apply_penalties(logits, history, prompt_len);
  for (const auto& [id, bias] : params_.logit_bias) logits[id] += bias;

  // NaN (also inf - inf from a bias) can't be ordered: it counts as -inf.
  // +inf becomes the largest float so that max - logit stays finite.
  float max = sanitize_max(logits);
  if (max == kNegInf)
    fail(
        "sampler: no token has a finite logit after penalties and logit bias (all are -inf "
        "or NaN)");
  return int32_t(find_first_at_least(logits, 0, max));
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len) {
  if (token_counts_.empty()) return;  // all penalties off
  for (size_t i = 0; i < history.size(); ++i)
    if (history[i] < 0 || size_t(history[i]) >= vocab_size_)
      fail("sampler: history token ", i, " has id ", history[i], ", outside the vocabulary (size ", vocab_size_, ")");

  // token_counts_ is all zero between calls: mark, apply once per distinct
  // token, then clear only the entries touched.
  if (float penalty = params_.repetition_penalty; penalty != 1) {
    for (int32_t id : history) {
      if (token_counts_[id] != 0) continue;
      token_counts_[id] = 1;
      float& l = logits[id];
      l = l > 0 ? l / penalty : l * penalty;
    }
    for (int32_t id : history) token_counts_[id] = 0;
  }
  if (params_.presence_penalty != 0 || params_.frequency_penalty != 0) {
    std::span<const int32_t> generated = history.subspan(prompt_len);
    for (int32_t id : generated) ++token_counts_[id];
    for (int32_t id : generated) {
      if (uint32_t count = token_counts_[id]) {
        logits[id] -= params_.presence_penalty + params_.frequency_penalty * float(count);
        token_counts_[id] = 0;
      }
    }
  }
}

void Sampler::select_candidates(std::span<const float> logits, float max_logit) {
  std::vector<int32_t>& ids = candidates_.ids;
  std::vector<float>& weights = candidates_.weights;
  bool any_zero;
  if (top_k_on_) {
    keep_top_k(logits);
    any_zero = exp_weights(weights, max_logit, params_.temperature, weights.data());
  } else {
    ids.resize(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    weights.resize(logits.size());
    any_zero = exp_weights(logits, max_logit, params_.temperature, weights.data());
  }
  // -inf logits and weights that underflow have probability 0.
  if (any_zero) keep_weights_at_least(std::numeric_limits<float>::denorm_min());
  keep_top_p();
  // p >= min_p * p_max  <=>  weight >= min_p, as the top token weighs 1 and
  // survives top-k and top-p.
  if (params_.min_p > 0) keep_weights_at_least(params_.min_p);
}

void Sampler::keep_top_k(std::span<const float> logits) {
  // A heap of the best k so far with the worst at the front. A SIMD scan
  // jumps to the next token that beats the front (a later id never wins a
  // tie); with typical logits only a few hundred do.
  size_t k = size_t(params_.top_k);
  auto& heap = ranked_;
  heap.clear();
  size_t i = 0;
  for (; i < logits.size() && heap.size() < k; ++i)
    if (logits[i] != kNegInf) heap.push_back({logits[i], int32_t(i)});
  std::make_heap(heap.begin(), heap.end(), ranks_before);
  auto next_better = [&](size_t from) {
    float worst = heap.front().first;
    return find_first_at_least(logits, from, std::nextafter(worst, -kNegInf));
  };
  if (heap.size() == k) {
    for (i = next_better(i); i < logits.size(); i = next_better(i + 1)) {
      std::pop_heap(heap.begin(), heap.end(), ranks_before);
      heap.back() = {logits[i], int32_t(i)};
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    }
  }
  candidates_.ids.clear();
  candidates_.weights.clear();
  for (const auto& [logit, id] : heap) {
    candidates_.ids.push_back(id);
    candidates_.weights.push_back(logit);  // turned into a weight by the caller
  }
}

void Sampler::keep_top_p() {
  if (params_.top_p >= 1) return;
  std::vector<int32_t>& ids = candidates_.ids;
  std::vector<float>& weights = candidates_.weights;
  double total = sum_weights(weights);
  double target = double(params_.top_p) * total;

  // Cheap SIMD passes first narrow the candidates to the weights above the
  // largest threshold 16^-j whose mass reaches the target: the kept prefix
  // lies above it. The margin covers rounding in the double sums.
  for (float threshold = 1.0f / 16; threshold >= 0x1p-32f; threshold /= 16) {
    if (mass_at_least(weights, threshold) >= target + 1e-9 * total) {
      keep_weights_at_least(threshold);
      break;
    }
  }

  std::fill(bucket_mass_.begin(), bucket_mass_.end(), 0.0);
  for (float w : weights) bucket_mass_[bucket_of(w)] += w;
  // The kept prefix of the sorted distribution is: every bucket before the
  // one where the cumulative mass reaches top_p, and the head of that one.
  double kept_mass = 0;
  size_t crossing = 0;
  while (crossing + 1 < kBucketCount && kept_mass + bucket_mass_[crossing] < target)
    kept_mass += bucket_mass_[crossing++];

  auto& in_crossing = ranked_;
  in_crossing.clear();
  size_t kept = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    size_t bucket = bucket_of(weights[i]);
    if (bucket == crossing) in_crossing.push_back({weights[i], ids[i]});
    ids[kept] = ids[i];
    weights[kept] = weights[i];
    kept += bucket < crossing;
  }
  ids.resize(kept);
  weights.resize(kept);
  std::sort(in_crossing.begin(), in_crossing.end(), ranks_before);
  for (const auto& [w, id] : in_crossing) {
    if (kept_mass >= target) break;
    ids.push_back(id);
    weights.push_back(w);
    kept_mass += w;
  }
}

void Sampler::keep_weights_at_least(float threshold) {
  std::vector<int32_t>& ids = candidates_.ids;
  std::vector<float>& weights = candidates_.weights;
  size_t kept = keep_at_least(ids, weights, threshold);
  ids.resize(kept);
  weights.resize(kept);
}

}  // namespace qinfer
