// The flags generate and chat share: the checkpoint and how to load it, how
// much to generate, the context, stop strings and sampling. One definition so
// both commands accept and validate them alike.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_flags.h"
#include "load_flags.h"
#include "runtime/model_bundle.h"
#include "sampling_options.h"

namespace qinfer::cli {

struct GenerationFlags {
  std::string model;
  LoadFlags load_flags;
  int64_t max_tokens;                            // -1: until eos or the context is full
  const CLI::Option* max_tokens_flag = nullptr;  // whether -n was given
  int64_t ctx = 0;                               // 0: the model's max_position_embeddings
  std::vector<std::string> stops;
  SamplingOverrides sampling;
  DraftFlags draft;

  explicit GenerationFlags(int64_t default_max_tokens) : max_tokens(default_max_tokens) {}
  void add_options(CLI::App* cmd, const char* max_tokens_help);

  // Validates -n, --draft and the load flags, then loads the checkpoint; threads_used is -t's count.
  ModelBundle load(int& threads_used) const;
  // --ctx against the model's maximum.
  int64_t context(const ModelBundle& bundle) const;
  // One sequence at a time through the batching engine, its KV pool sized for --ctx.
  engine::EngineOptions engine_options(const ModelBundle& bundle) const;
};

}  // namespace qinfer::cli
