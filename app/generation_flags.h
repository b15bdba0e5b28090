// The flags generate and chat share: the checkpoint and how to load it, how
// much to generate, the context, stop strings and sampling. One definition so
// both commands accept and validate them alike.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "runtime/model_bundle.h"
#include "sampling_options.h"

namespace qinfer::cli {

struct GenerationFlags {
  std::string model;
  int threads = 0;  // as given; see thread_count()
  std::string weights = "auto", kv = "f32";
  int64_t max_tokens;  // -1: until eos or the context is full
  int64_t ctx = 0;     // 0: the model's max_position_embeddings
  std::vector<std::string> stops;
  SamplingOverrides sampling;

  explicit GenerationFlags(int64_t default_max_tokens) : max_tokens(default_max_tokens) {}
  void add_options(CLI::App* cmd, const char* max_tokens_help);

  // Validates -n and -t, then loads the checkpoint with --weights / --kv.
  ModelBundle load(int& threads_used) const;
  // --ctx against the model's maximum.
  int64_t context(const ModelBundle& bundle) const;
  // One sequence at a time through the batching engine, its KV pool sized for --ctx.
  engine::EngineOptions engine_options(const ModelBundle& bundle) const;
};

}  // namespace qinfer::cli
