// The sampling flags shared by generate and chat: each overrides the model's
// generation_config.json default only when the user passes it.
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "runtime/sampler.h"

namespace qinfer::cli {

struct SamplingOverrides {
  std::optional<float> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;

  // Each flag is checked with the command line (exit 2 naming it), before
  // the model loads, in the sampler's ranges.
  void add_options(CLI::App* cmd) {
    cmd->add_option("--temp", temperature, "Temperature >= 0; 0 = greedy (default: generation_config.json)")
        ->check(real_check([](double x) { return x >= 0; }, ">= 0"));
    cmd->add_option("--top-k", top_k, "Keep the k most likely tokens; 0 or -1 = off")
        ->check(CLI::Validator(
            [](std::string& s) {
              char* end = nullptr;
              errno = 0;
              const long k = std::strtol(s.c_str(), &end, 10);
              const bool ok =
                  !s.empty() && *end == '\0' && errno != ERANGE && k >= -1 && k <= std::numeric_limits<int>::max();
              return ok ? std::string() : "must be an integer >= -1 (0 or -1 = off), not '" + s + "'";
            },
            ""));
    cmd->add_option("--top-p", top_p, "Nucleus sampling in (0, 1]: smallest set with probability >= p; 1 = off")
        ->check(real_check([](double x) { return x > 0 && x <= 1; }, "in (0, 1]"));
    cmd->add_option("--min-p", min_p, "Drop tokens below min_p * p(most likely), min_p in [0, 1]; 0 = off")
        ->check(real_check([](double x) { return x >= 0 && x <= 1; }, "in [0, 1]"));
    cmd->add_option("--repeat-penalty", repeat_penalty,
                    "Repetition penalty > 0 over prompt + output (HF semantics); 1 = off")
        ->check(real_check([](double x) { return x > 0; }, "> 0"));
    cmd->add_option("--presence-penalty", presence_penalty, "Presence penalty over the output (OpenAI semantics)")
        ->check(real_check([](double) { return true; }, ""));
    cmd->add_option("--frequency-penalty", frequency_penalty, "Frequency penalty over the output (OpenAI semantics)")
        ->check(real_check([](double) { return true; }, ""));
    cmd->add_option("--seed", seed,
                    "Random seed (0 to 2^64-1): the same seed gives the same output (default: a fresh one each run, "
                    "printed by --json)");  // decimal, within 64 bits: main checks every integer flag
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
    if (top_k) p.top_k = std::max(*top_k, 0);  // -1 = off, as vLLM's
    if (top_p) p.top_p = *top_p;
    if (min_p) p.min_p = *min_p;
    if (repeat_penalty) p.repetition_penalty = *repeat_penalty;
    if (presence_penalty) p.presence_penalty = *presence_penalty;
    if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
    p.seed = run_seed();
    return p;
  }

 private:
  // A finite number for which `ok` holds.
  template <class Ok>
  static CLI::Validator real_check(Ok ok, const std::string& range) {
    return CLI::Validator(
        [ok, range](std::string& s) {
          char* end = nullptr;
          errno = 0;
          const double x = std::strtod(s.c_str(), &end);
          if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || !ok(x))
            return "must be a finite number" + (range.empty() ? "" : " " + range) + ", not '" + s + "'";
          return std::string();
        },
        "");
  }
};

}  // namespace qinfer::cli
