// The sampling flags shared by generate and chat: each overrides the model's
// generation_config.json default only when the user passes it.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>

#include "runtime/sampler.h"

namespace qinfer::cli {

struct SamplingOverrides {
  std::optional<float> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  uint64_t seed = 0;

  void add_options(CLI::App* cmd) {
    cmd->add_option("--temp", temperature, "Temperature; 0 = greedy (default: generation_config.json)");
    cmd->add_option("--top-k", top_k, "Keep the k most likely tokens; 0 = off");
    cmd->add_option("--top-p", top_p, "Nucleus sampling: smallest set with probability >= p; 1 = off");
    cmd->add_option("--min-p", min_p, "Drop tokens below min_p * p(most likely); 0 = off");
    cmd->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty over prompt + output (HF semantics); 1 = off");
    cmd->add_option("--presence-penalty", presence_penalty, "Presence penalty over the output (OpenAI semantics)");
    cmd->add_option("--frequency-penalty", frequency_penalty, "Frequency penalty over the output (OpenAI semantics)");
    cmd->add_option("--seed", seed, "Random seed: the same seed gives the same output")->capture_default_str();
  }

  SamplingParams apply(SamplingParams p) const {
    if (temperature) p.temperature = *temperature;
    if (top_k) p.top_k = *top_k;
    if (top_p) p.top_p = *top_p;
    if (min_p) p.min_p = *min_p;
    if (repeat_penalty) p.repetition_penalty = *repeat_penalty;
    if (presence_penalty) p.presence_penalty = *presence_penalty;
    if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
    p.seed = seed;
    return p;
  }
};

}  // namespace qinfer::cli
