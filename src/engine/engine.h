// The batching engine: requests come and go, every step() runs the tokens the
// scheduler picks for all of them through one batched forward (continuous
// batching over a paged KV pool with a prefix cache), then samples each
// sequence that reached its end with its own sampler and hands the token to
// its callback. step() = schedule -> run -> postprocess, as nano-vllm. One
// thread calls it; frontends (CLI, server, tests) are callbacks over it.
// With speculative decoding on (EngineOptions::draft_tokens), a decoding sequence
// also runs a draft of the ids likely to follow (by prompt lookup, or by a
// draft model) and keeps those its draws confirm, so one step may give it
// several tokens: the same ones.
// A request's tokens are exactly those Session::generate gives it alone.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/block_manager.h"
#include "engine/draft_model.h"
#include "engine/model_runner.h"
#include "engine/ngram_draft.h"
#include "engine/prediction_draft.h"
#include "engine/scheduler.h"
#include "runtime/grammar_constraint.h"
#include "runtime/session.h"
#include "util/timer.h"

namespace qinfer::engine {

constexpr int64_t kMaxPoolBlocks = int64_t{1} << 24;  // the block manager's tables take ~64 bytes a block
constexpr int64_t kMaxRunning = int64_t{1} << 16;     // sequences one engine decodes at once
// Draft ids a step at most from a request's prediction where speculative
// decoding is otherwise off: a step of 16 more rows costs a CPU little more
// than a decode step's weight reads, and a rejected draft shrinks the next.
constexpr int32_t kPredictionDraftTokens = 16;
// A draft model unsure of a sequence's next id (its draft cut to nothing)
// skips that many of the sequence's steps, catching up after: one step, then
// twice as many each time again, up to this. A pass costs it as much as a
// draft, and where it is unsure it mostly stays so for a while.
constexpr int32_t kMaxDraftRest = 16;

struct EngineOptions {
  int32_t block_size = 16;         // positions per KV block
  int32_t kv_blocks = 0;           // 0: enough for max_running sequences of the full context
  int64_t max_batch_tokens = 512;  // the token budget of one step
  int64_t max_running = 16;        // sequences decoding at once
  int64_t context = 0;             // positions per sequence (prompt + output); 0: the model's maximum
  // Bytes the pool may take when kv_blocks is 0 (0: no bound): its pages are
  // committed as first used and then kept for the prefix cache, so a pool of
  // max_running full contexts would grow past the machine's memory.
  int64_t kv_memory_limit = 0;
  // Speculative decoding by prompt lookup (engine/ngram_draft.h): draft ids a
  // step at most (0: off) and the n-gram sizes looked up. A request with a
  // prediction (GenerationOptions::prediction) drafts from it whatever
  // draft_tokens is (kPredictionDraftTokens at most when it is 0).
  int32_t draft_tokens = 0, draft_min_ngram = 2, draft_max_ngram = 4;
  // Drafts by this model instead of prompt lookup (engine/draft_model.h),
  // draft_tokens a step at most (at least 1); it must outlive the engine and
  // share the model's vocabulary. Its keys/values take a pool of as many
  // blocks as the engine's (kv_memory_limit bounds both when it sizes them).
  const Qwen3Model* draft_model = nullptr;
  // Its drafts end at an id it gives less than this probability (0: never).
  float draft_p_min = 0.75f;
};

// Bytes of one KV block (keys and values of block_size positions, all layers).
int64_t kv_block_bytes(const Qwen3Model& model, int32_t block_size);
// Bytes an engine with these options takes per block: the model's, and its draft model's.
int64_t engine_block_bytes(const Qwen3Model& model, const EngineOptions& options);
// Positions (prompt + output) one sequence of an engine with these options
// may hold: the context, capped by the pool (Engine::context()).
int64_t sequence_context(const Qwen3Model& model, const EngineOptions& options);

// Sees each generated id and, when the request asked for them
// (GenerationOptions::logprobs >= 0), its log-probabilities (nullptr
// otherwise); returns false to stop the request.
using OnEngineToken = std::function<bool(int32_t id, const TokenLogprobs* logprobs)>;
// Sees a request's prompt log-probabilities (GenerationOptions::prompt_logprobs
// >= 0) once its prompt ran, before its first token.
using OnPromptLogprobs = std::function<void(std::span<const TokenLogprobs> logprobs)>;

class Engine {
 public:
  Engine(const Qwen3Model& model, ThreadPool& pool, const EngineOptions& options = {});

  // Queues a request; on_token sees each generated token. Returns its handle. Error for an empty prompt or one the
  // context or the KV pool cannot hold, or a named adapter the model does not have.
  int64_t add(std::span<const int32_t> prompt, const GenerationOptions& options, OnEngineToken on_token = {},
              OnPromptLogprobs on_prompt_logprobs = {});
  // Queues an embedding request: its prompt runs through the same steps as
  // any other's (batched, prefix cache) and it ends at its last position,
  // whose final hidden state (after the final norm) output() then gives.
  // Error as add(), except that the prompt may fill the context.
  int64_t add_embedding(std::span<const int32_t> prompt, const PromptOnlyOptions& options = {});
  // Queues a scoring request: as an embedding request, but its last prompt
  // position gives the logits of `token_ids` alone (a reranker's "yes" and
  // "no"), in that order, with no token sampled. Error for an id outside the
  // vocabulary, or none.
  int64_t add_scoring(std::span<const int32_t> prompt, std::vector<int32_t> token_ids,
                      const PromptOnlyOptions& options = {});
  // Stops a request wherever it is and frees its blocks; its result keeps
  // what it generated (reason Callback).
  void cancel(int64_t handle);
  // One step; false when there was nothing to do.
  bool step();
  void run_until_idle() {
    while (step()) {
    }
  }

  bool finished(int64_t handle) const;
  // The request's result (complete once finished()).
  const GenerationResult& result(int64_t handle) const;
  // The logits of the request's last prompt position, kept when its options
  // asked for them (keep_prompt_logits), once its first token is sampled.
  std::span<const float> prompt_logits(int64_t handle) const;
  // Once it finished, an embedding request's final hidden state
  // (hidden_size floats) or a scoring request's logits; empty for any other,
  // and when it failed (result().error says why) or was cancelled.
  std::span<const float> output(int64_t handle) const;
  // Forgets a finished request.
  void erase(int64_t handle);

  // What the latest step() ran: tokens and sequences (equal: a pure decode step).
  // The last step's rows; of its tokens, those of prompts (a one-token prompt's step is prefill all the same).
  struct StepStats {
    int64_t tokens = 0, seqs = 0, prompt_tokens = 0;
  };
  StepStats last_step() const { return last_step_; }
  // Drafts run so far, their ids, and of those the ones the model confirmed;
  // the rows a draft model ran (catching up and drafting), and its passes
  // (each reads its weights once).
  struct DraftStats {
    int64_t drafts = 0, drafted = 0, accepted = 0, model_rows = 0, model_passes = 0;
  };
  DraftStats draft_stats() const { return draft_stats_; }

  // Positions a sequence may hold: EngineOptions::context capped by the model's
  // and by the KV pool's.
  int64_t context() const { return context_; }
  const BlockManager& blocks() const { return blocks_; }
  const KvPool& kv_pool() const { return kv_; }
  const Scheduler& scheduler() const { return scheduler_; }

 private:
  struct Request {
    Sequence seq;
    GenerationOptions options;
    OnEngineToken on_token;
    OnPromptLogprobs on_prompt_logprobs;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<GrammarConstraint> constraint;  // options.grammar's state
    std::optional<ThinkingBudgetState> thinking;    // options.thinking's, when it has a budget
    GenerationResult result;
    std::vector<float> prompt_logits;
    std::vector<int32_t> score_ids;               // a scoring request's token ids
    std::vector<float> output;                    // an embedding or scoring request's result
    Timer since_add;                              // prefill_s: time to the first token; decode_s: from it to the last
    std::unique_ptr<PredictionDraft> prediction;  // options.prediction's drafts
    // Resting: none, the draft model skips it this step (kMaxDraftRest).
    enum class DraftSource : uint8_t {
      Lookup,
      Prediction,
      Model,
      Resting
    } draft_source = DraftSource::Lookup;         // its pending draft's
    int32_t draft_rest = 0, next_draft_rest = 1;  // the steps the draft model skips it (kMaxDraftRest)
  };
  // What a sequence's logits gave: the tokens drawn (none when its step did
  // not reach its end; with a draft, each draft id the draw confirmed, then
  // the token after the last), then maybe the end of its request without a
  // further token (NaN logits: Error; a grammar or masks of the request's
  // that cannot go on: Error, refused; a grammar done and no eos to say so: Eos).
  struct Draw {
    std::vector<TokenLogprobs> prompt_logprobs;  // of the prompt ids the step's rows predict, not yet recorded
    std::vector<int32_t> tokens;
    std::vector<TokenLogprobs> logprobs;  // per token, when the request asks for them
    bool ended = false;
    StopReason reason = StopReason::Error;
    std::string error;
    bool refused = false;
    std::exception_ptr unexpected;  // anything else thrown (rethrown on the engine thread)
  };
  // Buffers of one pool thread's draws.
  struct DrawScratch {
    std::vector<float> logits;
    std::vector<int32_t> history;  // ids and the draft ids confirmed so far
  };
  // Draws sequence i's next token, and with a draft the tokens after each id
  // of it the draws confirm (reads its request, changes only its sampler and
  // grammar: one thread per sequence).
  Draw draw(const Step& step, size_t i, DrawScratch& scratch);
  // Hands a drawn token to its request; false when the request ends with it.
  bool emit(Request& r, int32_t token, TokenLogprobs* logprobs);
  // The next step's drafts of the step's sequences still decoding: from
  // their predictions, else (with draft_tokens) by prompt lookup, or with a
  // draft model as placeholders its ids replace once the step is scheduled.
  void propose_drafts(const Step& step);
  // The draft model's jobs for the step: every sequence that will generate
  // catches up, those with a draft of the model's get its ids.
  // A draft the model was unsure of ends early: its rows leave the step.
  void draft_by_model(Step& step);
  // The checks of add(), add_embedding() and add_scoring(), and the request they queue.
  Request& queue(std::span<const int32_t> prompt, int64_t max_prompt, const PromptOnlyOptions& options);
  // An embedding or scoring request whose last position ran: keeps `values`
  // (its hidden state, or its logits of score_ids: `what` they are) and ends it.
  void finish_prompt_only(Request& r, std::vector<float> values, const char* what);
  // The log-probabilities of the prompt ids the step's rows predict, into the draws.
  void prompt_logprobs(const Step& step);
  void postprocess(const Step& step);
  Request& request(int64_t handle);

  const Qwen3Model& model_;
  EngineOptions options_;
  NgramDraftOptions draft_;
  int64_t context_;
  KvPool kv_;
  BlockManager blocks_;
  Scheduler scheduler_;
  ModelRunner runner_;
  std::unique_ptr<DraftModel> draft_model_;  // options.draft_model's drafts, when given
  std::vector<DraftJob> draft_jobs_;
  std::vector<size_t> draft_job_seqs_;  // each job's sequence in the step
  std::unordered_map<int64_t, std::unique_ptr<Request>> requests_;
  std::unordered_map<const Sequence*, Request*> by_seq_;
  ThreadPool& pool_;
  std::vector<DrawScratch> scratch_;  // per pool thread
  std::vector<Draw> draws_;
  StepStats last_step_;
  DraftStats draft_stats_;
  int64_t next_id_ = 0;
};

}  // namespace qinfer::engine
