// The sampling flags shared by generate and chat: each overrides the model's
// generation_config.json default only when the user passes it.
#pragma once
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "runtime/sampler.h"

namespace qinfer::cli {

struct SamplingOverrides {
  std::optional<float> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;

  void add_options(CLI::App* cmd) {
    cmd->add_option("--temp", temperature, "Temperature; 0 = greedy (default: generation_config.json)");
    cmd->add_option("--top-k", top_k, "Keep the k most likely tokens; 0 = off");
    cmd->add_option("--top-p", top_p, "Nucleus sampling: smallest set with probability >= p; 1 = off");
    cmd->add_option("--min-p", min_p, "Drop tokens below min_p * p(most likely); 0 = off");
    cmd->add_option("--repeat-penalty", repeat_penalty,
                    "Repetition penalty over prompt + output (HF semantics); 1 = off");
    cmd->add_option("--presence-penalty", presence_penalty, "Presence penalty over the output (OpenAI semantics)");
    cmd->add_option("--frequency-penalty", frequency_penalty, "Frequency penalty over the output (OpenAI semantics)");
    cmd->add_option("--seed", seed,
                    "Random seed (0 to 2^64-1): the same seed gives the same output (default: a fresh one each run, "
                    "printed by --json)")
        ->check(CLI::Validator(check_seed, "UINT64"));
  }

  // The seed of this run: --seed, or one drawn now and kept, so a frontend
  // can report it and the run can be repeated.
  uint64_t run_seed() {
    if (!seed) {
      std::random_device rd;
      seed = (uint64_t{rd()} << 32) ^ rd();
    }
    return *seed;
  }

  SamplingParams apply(SamplingParams p) {
    if (temperature) p.temperature = *temperature;
    if (top_k) p.top_k = *top_k;
    if (top_p) p.top_p = *top_p;
    if (min_p) p.min_p = *min_p;
    if (repeat_penalty) p.repetition_penalty = *repeat_penalty;
    if (presence_penalty) p.presence_penalty = *presence_penalty;
    if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
    p.seed = run_seed();
    return p;
  }

 private:
  // CLI11 would wrap "-1" around to 2^64-1 and say little about "1e3" or 2^64.
  static std::string check_seed(std::string& s) {
    const std::string why = "the seed must be an integer from 0 to 18446744073709551615, not '" + s + "'";
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return why;
    errno = 0;
    std::strtoull(s.c_str(), nullptr, 10);
    return errno == ERANGE ? why : std::string();
  }
};

}  // namespace qinfer::cli
