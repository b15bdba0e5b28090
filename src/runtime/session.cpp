#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "runtime/grammar_constraint.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer {

const char* finish_reason(StopReason r, bool stopped_by_string) {
  if (stopped_by_string) return "stop";
  switch (r) {
    case StopReason::Eos:
    case StopReason::Callback:
      return "stop";
    case StopReason::MaxTokens:
    case StopReason::ContextFull:
      return "length";
    case StopReason::Error:
      return "error";
  }
  return "?";
}

std::string nan_logits_error(std::span<const float> logits, size_t token, int64_t position) {
  const auto nan = std::count_if(logits.begin(), logits.end(), [](float x) { return std::isnan(x); });
  if (nan == 0) return {};
  std::ostringstream os;
  os << "the model's logits for generated token " << token << " (position " << position << ") have " << nan
     << " NaN values of " << logits.size() << ": the weights are corrupt";
  return os.str();
}

Session::Session(const Qwen3Model& model, ThreadPool& pool) : model_(model), pool_(pool), cache_(model.make_cache()) {}

GenerationResult Session::generate(std::span<const int32_t> prompt, const GenerationOptions& opts,
                                   const OnToken& on_token) {
  if (prompt.empty()) fail("the prompt is empty: at least one token is needed");
  if (opts.adapter != -1) fail("a named LoRA adapter runs in the batching engine, not a session");
  const int64_t context = model_.config().max_position_embeddings;
  if (static_cast<int64_t>(prompt.size()) >= context)
    fail("the prompt has ", prompt.size(), " tokens but the context length is ", context,
         " tokens: nothing can be generated");

  GenerationResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  // Reuse the cached prefix, keeping at least one prompt token to run for fresh logits.
  size_t keep = 0;
  while (keep < tokens_.size() && keep + 1 < prompt.size() && tokens_[keep] == prompt[keep]) ++keep;
  r.reused_tokens = static_cast<int64_t>(keep);
  tokens_.assign(prompt.begin(), prompt.end());

  Sampler sampler(opts.sampling, static_cast<size_t>(model_.config().vocab_size));
  std::optional<GrammarConstraint> constraint;
  if (opts.grammar) constraint.emplace(opts.grammar, opts.ignore_eos ? std::vector<int32_t>{} : opts.eos_ids);
  Timer timer;
  auto logits = forward(model_, prompt.subspan(keep), static_cast<int64_t>(keep), cache_, state_, pool_);
  prompt_logits_.assign(logits.begin(), logits.end());
  r.prefill_s = timer.seconds();
  timer.reset();

  std::vector<float> scratch;
  for (;;) {
    if (const std::string error = nan_logits_error(logits, r.ids.size() + 1, static_cast<int64_t>(tokens_.size()));
        !error.empty())
      fail(error);
    if (constraint && constraint->complete()) {  // the grammar is done and no eos may say so
      r.reason = StopReason::Eos;
      break;
    }
    scratch.assign(logits.begin(), logits.end());
    const int32_t next = sampler.sample(scratch, tokens_, prompt.size(), constraint ? &*constraint : nullptr);
    if (constraint) constraint->accept(next);
    r.ids.push_back(next);
    const bool is_eos =
        !opts.ignore_eos && std::find(opts.eos_ids.begin(), opts.eos_ids.end(), next) != opts.eos_ids.end();
    const bool keep_going = on_token ? on_token(next) : true;
    if (is_eos) {
      r.reason = StopReason::Eos;
      break;
    }
    if (!keep_going) {
      r.reason = StopReason::Callback;
      break;
    }
    if (static_cast<int64_t>(r.ids.size()) >= opts.max_new_tokens) {
      r.reason = StopReason::MaxTokens;
      break;
    }
    if (static_cast<int64_t>(tokens_.size()) + 1 >= context) {  // prompt + completion: at most the context
      r.reason = StopReason::ContextFull;
      break;
    }
    logits = forward(model_, std::span(&next, 1), static_cast<int64_t>(tokens_.size()), cache_, state_, pool_);
    tokens_.push_back(next);
  }
  // The last sampled token has no keys/values yet; it is not part of the cached sequence.
  r.decode_s = timer.seconds();
  return r;
}

}  // namespace qinfer
