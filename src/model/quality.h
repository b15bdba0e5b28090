// How closely a converted model (quantized weights, a 16-bit KV cache)
// follows the exact one: the logits of both, teacher-forced over the same
// tokens, and the measures of their agreement. `qinfer bench` reports them;
// tests/model/quant_quality_test.cpp holds them to bounds.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "model/qwen3.h"
#include "util/thread_pool.h"

namespace qinfer {

// The logits at every position of seq ([seq.size(), vocab_size]) from a fresh
// cache: one prefill forward, or (decode) one forward per token, so quality
// checks can compare the two paths of a converted model with the exact one.
std::vector<float> teacher_forced_logits(const Qwen3Model& model, std::span<const int32_t> seq, bool decode,
                                         ThreadPool& pool);

// How closely `test` logits follow `ref` logits over rows of `vocab` entries
// (the quality measure of quantized weights): the share of rows whose argmax
// agrees, also among the "clear" rows whose ref top-1 leads the runner-up by
// at least clear_margin; the mean KL(softmax(ref) || softmax(test)) in nats;
// the rms difference of the logits.
struct LogitAgreement {
  double clear_margin = 0.5;
  int64_t rows = 0, top1_agree = 0, clear_rows = 0, clear_agree = 0;
  double kl_sum = 0, sq_error_sum = 0;
  double top1() const { return rows ? static_cast<double>(top1_agree) / rows : 0; }
  double clear_top1() const { return clear_rows ? static_cast<double>(clear_agree) / clear_rows : 0; }
  double mean_kl() const { return rows ? kl_sum / rows : 0; }
  double rms_error() const { return rows ? std::sqrt(sq_error_sum / rows) : 0; }
  void add(const float* ref, const float* test, int64_t vocab);
};

}  // namespace qinfer
