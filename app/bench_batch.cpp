// qinfer bench-batch: throughput of the batching engine at several levels of
// parallelism (as llama.cpp's llama-batched-bench): P sequences of a p-token
// prompt each generate n tokens; reported per level are the prefill rate, the
// aggregate decode rate (tokens of all sequences per second, over the steps
// where every sequence decodes) and the rate each sequence sees.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "build_info.h"
#include "commands.h"
#include "engine/engine.h"
#include "io/model_dir.h"
#include "load_flags.h"
#include "peak_rss.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

struct BenchBatchArgs {
  std::string model;
  std::string parallel = "1,4,16,64";
  int64_t prompt_tokens = 128, gen_tokens = 128;
  LoadFlags load{"f16"};
  bool json = false;
};

std::vector<int64_t> parse_levels(const std::string& s) {
  std::vector<int64_t> levels;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1 || v > 4096) throw std::invalid_argument(item);
      levels.push_back(v);
    } catch (const std::exception&) {
      usage_fail("--parallel: '", item, "' is not a number of sequences in [1, 4096] (expected e.g. 1,4,16,64)");
    }
  }
  if (levels.empty()) usage_fail("--parallel: no levels given");
  return levels;
}

void run_bench_batch(const BenchBatchArgs& a) {
  if (a.prompt_tokens < 1 || a.gen_tokens < 2) usage_fail("-p must be at least 1 and -n at least 2");
  const std::vector<int64_t> levels = parse_levels(a.parallel);
  const LoadOptions lo = a.load.options();
  const std::string dir = resolve_model_dir(a.model);
  auto model = Qwen3Model::load(dir, lo);
  const int64_t context = model->config().max_position_embeddings;
  if (a.prompt_tokens > context || a.gen_tokens > context || a.prompt_tokens + a.gen_tokens > context)
    fail("-p + -n exceeds the context length of ", context);
  ThreadPool pool(lo.threads);
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const int64_t P : levels) {
    engine::EngineOptions o;
    o.max_running = P;
    o.max_batch_tokens = std::clamp<int64_t>(P * a.prompt_tokens, 512, 8192);
    o.kv_blocks = static_cast<int32_t>(P * ((a.prompt_tokens + a.gen_tokens + o.block_size - 1) / o.block_size + 1));
    reset_peak_rss();
    engine::Engine engine(*model, pool, o);
    GenerationOptions g;
    g.max_new_tokens = a.gen_tokens;
    g.ignore_eos = true;
    g.sampling.temperature = 0;
    for (int64_t s = 0; s < P; ++s) {
      std::vector<int32_t> prompt;  // distinct prompts: no prefix cache hits
      for (int64_t t = 0; t < a.prompt_tokens; ++t)
        prompt.push_back(static_cast<int32_t>((t * 7919 + s * 104729 + 17) % model->config().vocab_size));
      engine.add(prompt, g);
    }
    // Steps that run only decode rows count as decode; the others (prompts,
    // alone or with decodes) as prefill.
    double prefill_s = 0, decode_s = 0;
    int64_t prefilled = 0, decoded = 0;
    for (;;) {
      Timer step_timer;
      if (!engine.step()) break;
      const double dt = step_timer.seconds();
      const auto st = engine.last_step();
      if (st.prompt_tokens == 0) {
        decode_s += dt;
        decoded += st.seqs;
      } else {
        prefill_s += dt;
        prefilled += st.tokens;
      }
    }
    const double agg = decode_s > 0 ? decoded / decode_s : 0;
    const double kv_mib = static_cast<double>(engine.kv_pool().bytes()) / (1 << 20), rss = peak_rss_mib();
    results.push_back({{"parallel", P},
                       {"prefill_tok_s", prefill_s > 0 ? prefilled / prefill_s : 0},
                       {"decode_tok_s", agg},
                       {"decode_tok_s_per_seq", agg / P},
                       {"kv_blocks", engine.blocks().n_blocks()},
                       {"kv_pool_mib", kv_mib},
                       {"peak_rss_mib", rss}});
    if (!a.json)
      std::printf(
          "parallel %4lld  prefill %8.1f tok/s  decode %8.1f tok/s aggregate, %6.2f per sequence  "
          "KV pool %.1f MiB (%lld blocks), peak RSS %.0f MiB\n",
          static_cast<long long>(P), results.back()["prefill_tok_s"].get<double>(), agg, agg / P, kv_mib,
          static_cast<long long>(engine.blocks().n_blocks()), rss);
  }
  if (a.json) {
    const BuildInfo b = build_info();
    nlohmann::ordered_json j = {{"model", dir},
                                {"threads", pool.size()},
                                {"weights", weight_format_name(model->weights().layers.at(0).q_proj.format)},
                                {"kv", a.load.kv},
                                {"prompt_tokens", a.prompt_tokens},
                                {"gen_tokens", a.gen_tokens},
                                {"simd_target", b.simd_target},
                                {"levels", results}};
    std::printf("%s\n", j.dump().c_str());
  }
}

}  // namespace

void add_bench_batch_command(CLI::App& app) {
  auto a = std::make_shared<BenchBatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench-batch", "Measure the batching engine: prefill and aggregate decode tokens/s at several parallel levels");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory or hub id")->required();
  cmd->add_option("--parallel", a->parallel, "Comma-separated numbers of concurrent sequences")->capture_default_str();
  cmd->add_option("-p,--prompt-tokens", a->prompt_tokens, "Prompt length of each sequence")->capture_default_str();
  cmd->add_option("-n,--gen-tokens", a->gen_tokens, "Tokens each sequence generates")->capture_default_str();
  a->load.add_options(cmd);
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([a] { run_bench_batch(*a); });
}

}  // namespace qinfer::cli
