// The generation loop every frontend shares: prefill the prompt in one batched
// forward, then sample and decode one token at a time through the KV cache.
// Frontends (CLI, chat, server, tests) observe and steer it through a callback.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/qwen3.h"
#include "runtime/logprobs.h"
#include "runtime/prediction.h"
#include "runtime/sampler.h"
#include "runtime/thinking_budget.h"

namespace qinfer {

struct OutputGrammar;

struct GenerationOptions {
  int64_t max_new_tokens = 128;
  SamplingParams sampling;
  std::vector<int32_t> eos_ids;  // stop after emitting any of these
  bool ignore_eos = false;
  // The batching engine only, vLLM's sampling extras: ids that end the
  // output as eos does, ignore_eos or not (stop_token_ids); until
  // min_tokens ids are out, eos and those ids get a logit of -infinity
  // (min_tokens); when not empty, the only ids drawn (allowed_token_ids).
  std::vector<int32_t> stop_ids;
  int64_t min_tokens = 0;
  std::vector<int32_t> allowed_ids;
  // The batching engine only, vLLM's bad_words: id sequences the output never
  // completes (a sequence's last id gets -infinity where the output so far
  // ends with the rest of it; a one-id one, always).
  std::vector<std::vector<int32_t>> bad_words;
  ThinkingBudget thinking;  // the batching engine only: vLLM's thinking_token_budget
  // The batching engine only: -1 off; N >= 0: each token's log-probability
  // and the N most likely alternatives (GenerationResult::logprobs).
  int32_t logprobs = -1;
  // The batching engine only: -1 off; N >= 0: each prompt token after the
  // first, its log-probability given the ones before it and the N most
  // likely there (GenerationResult::prompt_logprobs; vLLM's prompt_logprobs).
  // Every prompt position then runs (no prefix cache), its logits kept.
  int32_t prompt_logprobs = -1;
  // The batching engine keeps the last prompt position's logits only when
  // asked (a vocabulary of floats per request); Session always keeps them.
  bool keep_prompt_logits = false;
  // The output follows this grammar (constrained decoding); null: free.
  std::shared_ptr<const OutputGrammar> grammar;
  // The batching engine only: the named LoRA adapter this request runs with
  // (an index into Qwen3Model::adapter_names()); -1: none.
  int32_t adapter = -1;
  // The batching engine only: what the output is expected to repeat mostly
  // (OpenAI's predicted outputs: the file an edit rewrites); speculative
  // decoding drafts from it (engine/prediction_draft.h), which changes the
  // speed, never the output. Null: none.
  std::shared_ptr<const Prediction> prediction;
  // The batching engine only, vLLM's cache_salt: the request's keys/values
  // are cached for, and taken from the cache by, requests with the same salt
  // only ("": none). A tenant's own salt hides its prompts from the others'.
  std::string cache_salt;
  // The batching engine only, vLLM's priority: a lower one is scheduled
  // first, and a higher one preempted first (then arrival order).
  int32_t priority = 0;
};

// What the batching engine's embedding and scoring requests run with:
// GenerationOptions' adapter, cache_salt and priority, their only options.
struct PromptOnlyOptions {
  int32_t adapter = -1;
  std::string cache_salt;
  int32_t priority = 0;
};

// A generation request's, as the engine queues every request.
inline PromptOnlyOptions prompt_only_options(const GenerationOptions& options) {
  return {options.adapter, options.cache_salt, options.priority};
}

// Error: the model's logits were unusable (NaN); GenerationResult::error says where.
enum class StopReason { Eos, MaxTokens, ContextFull, Callback, Error };
// The finish reason every frontend reports, in OpenAI's words: "stop" (an eos
// token, a stop string, or the caller stopped it) or "length" (max tokens or
// the context is full); "error" when generation failed.
const char* finish_reason(StopReason r, bool stopped_by_string);

struct GenerationResult {
  std::vector<int32_t> ids;             // generated tokens (an eos that stopped generation included)
  std::vector<TokenLogprobs> logprobs;  // per id, when GenerationOptions::logprobs >= 0
  // Prompt ids 1.. (the first has no context), when GenerationOptions::prompt_logprobs >= 0.
  std::vector<TokenLogprobs> prompt_logprobs;
  StopReason reason = StopReason::MaxTokens;
  std::string error;  // reason Error: what went wrong, and at which token
  // reason Error: the request's own constraints could not go on (a grammar
  // too ambiguous; a grammar, allowed_token_ids, bad_words and min_tokens
  // that leave no token to draw): the request's fault, not the model's.
  bool refused = false;
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;  // prompt tokens whose keys/values were already cached
  // The batching engine, with a prediction (GenerationOptions::prediction):
  // per id, whether it came from a confirmed draft of it (OpenAI's accepted
  // prediction tokens: those of the ids a frontend keeps); and its ids
  // drafted and never confirmed (rejected prediction tokens).
  std::vector<bool> from_prediction;
  int64_t rejected_prediction_tokens = 0;
  double prefill_s = 0, decode_s = 0;
  double prefill_tok_s() const { return prefill_s > 0 ? (prompt_tokens - reused_tokens) / prefill_s : 0; }
  double decode_tok_s() const { return decode_s > 0 && ids.size() > 1 ? (ids.size() - 1) / decode_s : 0; }
};

// NaN logits come from corrupt weights (or an overflow): no token can be
// chosen from them, and sampling around them would hide the fault. Returns
// the error for logits that hold NaN, naming the generated token (1-based)
// and its position; empty when there is none.
std::string nan_logits_error(std::span<const float> logits, size_t token, int64_t position);

// Called with each new token; return false to stop (stop string, Ctrl-C, client gone).
using OnToken = std::function<bool(int32_t id)>;

// One sequence with its KV cache. Successive generate() calls reuse the cached
// keys/values of the longest common prefix (a chat's earlier turns).
class Session {
 public:
  Session(const Qwen3Model& model, ThreadPool& pool);

  GenerationResult generate(std::span<const int32_t> prompt, const GenerationOptions& opts, const OnToken& on_token);

  // Logits of the last prompt position of the latest generate() (before sampling).
  std::span<const float> prompt_logits() const { return prompt_logits_; }
  // Every token whose keys/values are in the cache, in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  void reset() { tokens_.clear(); }

 private:
  const Qwen3Model& model_;
  ThreadPool& pool_;
  KvCache cache_;
  ForwardState state_;
  std::vector<int32_t> tokens_;
  std::vector<float> prompt_logits_;
};

}  // namespace qinfer
