// Turns one row of logits into the next token id: penalties and logit bias,
// then temperature, top-k, top-p, min-p, renormalization and a seeded draw.
// Pure logic over spans, independent of the model (its passes over the whole
// vocabulary are the SIMD kernels of ops/sampling.h); one Sampler per generated
// sequence (it owns the random-number generator and the scratch buffers).
// Cost at V = 151,936 (bench/sampler_bench.cpp): tens of microseconds with
// top-k, a few hundred without; no pass sorts the vocabulary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace qinfer {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy: argmax, the lowest id on ties
  int top_k = 0;             // 0 or >= vocabulary size = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  // Hugging Face semantics: every distinct token of prompt + generated text
  // once, logit > 0 ? logit / penalty : logit * penalty. 1 = off.
  float repetition_penalty = 1.0f;
  // OpenAI / vLLM semantics, over the generated tokens only (not the prompt):
  // logit -= presence_penalty * (count > 0) + frequency_penalty * count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Added to the logit of the id; -infinity bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // The same seed and inputs give the same tokens, on every platform.
  uint64_t seed = 0;
};

// Which tokens may be drawn next (a grammar's, for constrained decoding).
class TokenFilter {
 public:
  virtual ~TokenFilter() = default;
  virtual bool allows(int32_t id) = 0;
  // Sets the logits of the tokens it does not allow to -infinity.
  virtual void mask(std::span<float> logits) = 0;
};

struct TokenProb {
  int32_t id;
  double prob;
};

class Sampler {
 public:
  // Throws qinfer::Error when a parameter is out of range.
  Sampler(SamplingParams params, size_t vocab_size);

  // `logits` (vocab_size entries) is used as scratch and left modified.
  // `history` is prompt + generated ids so far; its first `prompt_len` ids
  // are the prompt. NaN logits count as -infinity and +infinity as the
  // largest float; throws qinfer::Error when no token has a finite logit.
  // With a filter, the tokens it refuses have probability 0: the draw is
  // that of logits masked by it (greedy asks it about the argmax alone first).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len,
                 TokenFilter* filter = nullptr);

  // The distribution sample() draws from: the tokens that survive the
  // filters with their renormalized probabilities, most probable first
  // (lowest id first on ties). Greedy gives the argmax with probability 1.
  std::vector<TokenProb> distribution(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len);

  const SamplingParams& params() const { return params_; }

 private:
  // Token ids that may be drawn and their unnormalized weights
  // exp((logit - max_logit) / temperature), in (0, 1]; the max token has 1.
  struct Candidates {
    std::vector<int32_t> ids;
    std::vector<float> weights;
  };

  // Penalties and bias, then NaN -> -inf and +inf -> max float; returns the
  // argmax (lowest id on ties).
  int32_t prepare_logits(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len);
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history, size_t prompt_len);
  // Fills candidates_ from the prepared logits: top-k, softmax weights,
  // top-p, min-p.
  void select_candidates(std::span<const float> logits, float max_logit);
  void keep_top_k(std::span<const float> logits);
  void keep_top_p();
  void keep_weights_at_least(float threshold);

  SamplingParams params_;
  size_t vocab_size_;
  bool top_k_on_;
  std::mt19937_64 rng_;
  std::vector<uint32_t> token_counts_;  // zero between calls; sized only if penalties are on
  Candidates candidates_;
  std::vector<double> bucket_mass_;  // top-p: weight per bucket of similar weights
  // (logit or weight, id): the top-k heap, then top-p's crossing bucket.
  std::vector<std::pair<float, int32_t>> ranked_;
};

}  // namespace qinfer
