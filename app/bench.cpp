// qinfer bench: prefill and decode speed, decode bandwidth against a read
// probe measured in the same run (the machine's noise makes cross-run
// comparisons meaningless), load time and peak memory.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "commands.h"
#include "io/model_dir.h"
#include "model/qwen3.h"
#include "ops/simd.h"
#include "runtime/generator.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

struct BenchArgs {
  std::string model;
  int64_t prompt_tokens = 512, gen_tokens = 128;
  int threads = 0, reps = 3;
  bool json = false;
};

// Read bandwidth of the machine: every thread sums its part of a buffer much
// larger than the caches; best of several passes.
double probe_read_gb_s(ThreadPool& pool) {
  const size_t n = (512u << 20) / sizeof(float);
  std::vector<float> buf(n);
  pool.parallel_for(n, 1 << 16, [&](size_t b, size_t e) { std::fill(buf.begin() + b, buf.begin() + e, 1.0f); });
  double best = 0;
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  for (int pass = 0; pass < 5; ++pass) {
    Timer t;
    pool.run([&](int id) {
      const size_t b = n * id / pool.size(), e = n * (id + 1) / pool.size();
      sink[id] += simd::dot(&buf[b], &buf[b], e - b);
    });
    best = std::max(best, n * sizeof(float) / t.seconds() / 1e9);
  }
  return best;
}

double peak_rss_mib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Bytes a decode step reads: every weight matrix except the embedding table
// (one row of it), plus the norms.
double decode_bytes_per_token(const Qwen3Model& m) {
  const Qwen3Weights& w = m.weights();
  auto bytes = [](const WeightMatrix& x) { return static_cast<double>(x.bytes()); };
  double total = bytes(w.lm_head);
  for (const Qwen3Layer& l : w.layers)
    for (const WeightMatrix* x : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      total += bytes(*x);
  return total;
}

void run_bench(const BenchArgs& a) {
  if (a.prompt_tokens < 1 || a.gen_tokens < 2 || a.reps < 1) fail("bench needs -p >= 1, -n >= 2, --reps >= 1");
  const std::string dir = resolve_model_dir(a.model);
  Timer load_timer;
  auto model = Qwen3Model::load(dir);
  const double load_s = load_timer.seconds();
  ThreadPool pool(a.threads);
  const double probe = probe_read_gb_s(pool);

  std::vector<int32_t> prompt(static_cast<size_t>(a.prompt_tokens));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % 150000);
  GenerationOptions opts;
  opts.max_new_tokens = a.gen_tokens;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;

  std::vector<double> pp, tg;
  for (int r = 0; r < a.reps; ++r) {
    Session session(*model, pool);
    const GenerationResult res = session.generate(prompt, opts, nullptr);
    pp.push_back(res.prefill_tok_s());
    tg.push_back(res.decode_tok_s());
    if (!a.json)
      std::fprintf(stderr, "run %d: pp%lld %.1f tok/s, tg%lld %.2f tok/s\n", r + 1, static_cast<long long>(a.prompt_tokens),
                   pp.back(), static_cast<long long>(a.gen_tokens), tg.back());
  }
  const Stats P = stats(pp), T = stats(tg);
  const double gb_per_token = decode_bytes_per_token(*model) / 1e9;
  const double tg_gb_s = T.median * gb_per_token;
  nlohmann::ordered_json j = {{"model", dir},
                              {"threads", pool.size()},
                              {"prompt_tokens", a.prompt_tokens},
                              {"gen_tokens", a.gen_tokens},
                              {"reps", a.reps},
                              {"pp_tok_s", P.median},
                              {"pp_tok_s_min", P.min},
                              {"pp_tok_s_max", P.max},
                              {"tg_tok_s", T.median},
                              {"tg_tok_s_min", T.min},
                              {"tg_tok_s_max", T.max},
                              {"decode_gb_per_token", gb_per_token},
                              {"tg_gb_s", tg_gb_s},
                              {"probe_gb_s", probe},
                              {"roofline_tok_s", probe / gb_per_token},
                              {"roofline_pct", 100.0 * tg_gb_s / probe},
                              {"load_s", load_s},
                              {"peak_rss_mib", peak_rss_mib()}};
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("model        %s (%d threads)\n", dir.c_str(), pool.size());
  std::printf("prefill      pp%lld  %8.1f tok/s  (min %.1f, max %.1f, %d runs)\n", static_cast<long long>(a.prompt_tokens),
              P.median, P.min, P.max, a.reps);
  std::printf("decode       tg%lld  %8.2f tok/s  (min %.2f, max %.2f)\n", static_cast<long long>(a.gen_tokens), T.median,
              T.min, T.max);
  std::printf("bandwidth    %.2f GB/token x %.2f tok/s = %.1f GB/s; read probe %.1f GB/s -> %.0f%% of roofline (%.1f tok/s)\n",
              gb_per_token, T.median, tg_gb_s, probe, 100.0 * tg_gb_s / probe, probe / gb_per_token);
  std::printf("load         %.3f s, peak RSS %.0f MiB\n", load_s, peak_rss_mib());
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode tokens/s, decode GB/s against a bandwidth probe");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory or hub id (see make-test-model)")->required();
  cmd->add_option("-p,--prompt-tokens", a->prompt_tokens, "Prompt length for the prefill measurement")->capture_default_str();
  cmd->add_option("-n,--gen-tokens", a->gen_tokens, "Tokens decoded after the prompt")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all hardware threads)");
  cmd->add_option("--reps", a->reps, "Repetitions (median and spread are reported)")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object (pp_tok_s, tg_tok_s, roofline_pct, ...)");
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace qinfer::cli
