// The batching engine's flags that batch and serve share: sequences at once,
// the token budget of a step, and the KV pool (--kv-blocks or --kv-mem, the
// block size); and speculative decoding's, which generate and chat take too.
// One definition, so the commands accept and validate them alike.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "engine/engine.h"
#include "runtime/model_bundle.h"

namespace qinfer::cli {

struct EngineFlags {
  int64_t parallel = 16, max_batch_tokens = 512;
  int32_t kv_blocks = 0, block_size = 16;
  double kv_mem_mib = 0;

  void add_options(CLI::App* cmd);
  // Error naming the flag for a value out of its range (before the model loads).
  void validate() const;
  // For `model` (and its draft model): --kv-mem in blocks, and without a pool size the memory that bounds the default
  // one.
  engine::EngineOptions engine_options(const Qwen3Model& model, int64_t context = 0,
                                       const Qwen3Model* draft_model = nullptr) const;
};

// Speculative decoding, for the commands that generate (generate, chat,
// batch, serve, run-batch): --draft N and the n-gram sizes looked up (prompt
// lookup), or --draft-model's drafts.
struct DraftFlags {
  // A draft model's draft ids a step when --draft is not given: its passes
  // cost it a decode step each, and a rejected id wastes those after it.
  static constexpr int32_t kModelDraftTokens = 4;

  int32_t tokens = 0, min_ngram = 2, max_ngram = 4;
  std::string model;  // --draft-model
  float p_min = engine::EngineOptions{}.draft_p_min;
  // Whether they were given.
  const CLI::Option *tokens_flag = nullptr, *model_flag = nullptr, *p_min_flag = nullptr, *min_ngram_flag = nullptr,
                    *max_ngram_flag = nullptr;

  void add_options(CLI::App* cmd);
  // Error naming the flag for a value out of its range (before the model loads).
  void validate() const;
  bool on() const { return tokens > 0 || !model.empty(); }
  // Loads --draft-model, when given, into bundle.draft_model: as the model
  // was loaded (weights, KV type, threads) but without its adapters.
  void load_model(ModelBundle& bundle, LoadOptions options) const;
  void apply(engine::EngineOptions& options, const ModelBundle& bundle) const;
  // "; drafts: A of D tokens accepted" for a run's summary line; empty when off.
  std::string summary(const engine::Engine::DraftStats& stats) const;
};

}  // namespace qinfer::cli
