// The flags of every command that loads a model to compute on it: -t,
// --weights, --kv, --simd, --fast-prefill and --lora. One definition, so each command validates them alike
// (the thread count capped at the hardware, the formats named on error).
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/qwen3.h"

namespace qinfer::cli {

struct LoadFlags {
  int threads = 0;  // as given; see thread_count()
  std::string weights = "auto", kv;
  std::optional<std::string> simd;  // unset: the best target this CPU runs
  bool fast_prefill = false;
  std::vector<std::string> lora;  // PEFT adapter directories

  explicit LoadFlags(std::string default_kv = "f32") : kv(std::move(default_kv)) {}
  void add_options(CLI::App* cmd);
  // The validated values; .threads is the count to run with (never 0).
  // Applies --simd: the kernels dispatch to that target from then on.
  LoadOptions options() const;
};

}  // namespace qinfer::cli
