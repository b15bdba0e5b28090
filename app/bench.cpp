// qinfer bench: prefill and decode speed, decode bandwidth against a read
// probe measured in the same run (the machine's noise makes cross-run
// comparisons meaningless), prefill GFLOP/s against an FMA probe of the same
// run, load time and peak memory.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include "build_info.h"
#include "commands.h"
#include "io/model_dir.h"
#include "load_flags.h"
#include "model/checkpoint_quantization.h"
#include "model/quality.h"
#include "model/qwen3.h"
#include "ops/simd.h"
#include "peak_rss.h"
#include "runtime/session.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

struct BenchArgs {
  std::string model;
  int64_t prompt_tokens = 512, gen_tokens = 128;
  int reps = 3;
  LoadFlags load;
  int64_t quality_tokens = 0;
  bool json = false;
};

// Read bandwidth of the machine: every thread sums its part of a buffer much
// larger than the caches; best of several passes. The buffer is left
// uninitialised and first written by the threads that read it (a serial
// zero fill of 512 MB took longer than the passes themselves).
double probe_read_gb_s(ThreadPool& pool) {
  const size_t n = (512u << 20) / sizeof(float);
  const std::unique_ptr<float[]> buf(new float[n]);
  const auto part = [&](int id) { return std::pair{n * id / pool.size(), n * (id + 1) / pool.size()}; };
  pool.run([&](int id) {
    const auto [b, e] = part(id);
    std::fill(&buf[b], &buf[e], 1.0f);
  });
  double best = 0;
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  for (int pass = 0; pass < 5; ++pass) {
    Timer t;
    pool.run([&](int id) {
      const auto [b, e] = part(id);
      sink[id] += simd::dot(&buf[b], &buf[b], e - b);
    });
    best = std::max(best, n * sizeof(float) / t.seconds() / 1e9);
  }
  return best;
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}

std::vector<int32_t> bench_prompt(int64_t n) {
  std::vector<int32_t> prompt(static_cast<size_t>(n));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % 150000);
  return prompt;
}

// The converted model against the checkpoint as stored (weights widened
// exactly, f32 KV cache), teacher-forced over the first n bench prompt tokens.
nlohmann::ordered_json quality_report(const Qwen3Model& model, const std::string& dir, int64_t n, ThreadPool& pool) {
  const auto exact = Qwen3Model::load(dir);
  const std::vector<int32_t> seq = bench_prompt(n);
  const std::vector<float> ref = teacher_forced_logits(*exact, seq, false, pool);
  const int64_t V = model.config().vocab_size;
  nlohmann::ordered_json report;
  for (bool decode : {false, true}) {
    const std::vector<float> test = teacher_forced_logits(model, seq, decode, pool);
    LogitAgreement a;
    a.clear_margin = 1.0;
    for (int64_t i = 0; i < n; ++i) a.add(&ref[i * V], &test[i * V], V);
    report[decode ? "decode" : "prefill"] = {
        {"positions", a.rows},
        {"top1_agreement", a.top1()},
        {"clear_positions", a.clear_rows},
        // null: no position had a clear top-1 to agree on
        {"clear_top1_agreement", a.clear_rows ? nlohmann::ordered_json(a.clear_top1()) : nlohmann::ordered_json()},
        {"mean_kl", a.mean_kl()},
        {"rms_logit_error", a.rms_error()}};
  }
  return report;
}

// Calls f(matrix, share) on each weight matrix a token goes through (all but
// the embedding table, of which a step reads one row), share being the part
// of it a token uses: a mixture's experts top_k / experts each, 1 otherwise.
template <class F>
void for_each_matmul_weight(const Qwen3Model& m, F f) {
  const Qwen3Weights& w = m.weights();
  f(w.lm_head, 1.0);
  for (const Qwen3Layer& l : w.layers) {
    for (const WeightMatrix* x : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      if (x->data) f(*x, 1.0);
    for (const LoraProjection& p : lora_projections(m.config()))
      for (const LoraDelta& d : l.lora.*p.deltas) {  // --lora: A, and B as the [r, out] rows it is kept in
        f(d.a, 1.0);
        f(d.b(), 1.0);
      }
    if (l.sparse_mlp.experts.empty()) continue;
    f(l.sparse_mlp.router, 1.0);
    const double share = static_cast<double>(l.sparse_mlp.top_k) / static_cast<double>(l.sparse_mlp.experts.size());
    for (const MlpExpert& e : l.sparse_mlp.experts)
      for (const WeightMatrix* x : {&e.gate_proj, &e.up_proj, &e.down_proj}) f(*x, share);
  }
}

// Bytes a decode step reads from weights (a mixture's: of the average top_k experts).
double decode_weight_bytes(const Qwen3Model& m) {
  double total = 0;
  for_each_matmul_weight(m,
                         [&](const WeightMatrix& x, double share) { total += share * static_cast<double>(x.bytes()); });
  return total;
}

// Floating-point operations of an n-token prefill: 2 per weight per token in
// the layers' matmuls, the lm_head for the last position only, and causal
// attention (scores and values: 4 per head dimension per head per key).
double prefill_flops(const Qwen3Model& m, int64_t n) {
  double layer_weights = 0;
  for_each_matmul_weight(
      m, [&](const WeightMatrix& x, double share) { layer_weights += share * static_cast<double>(x.rows * x.cols); });
  const WeightMatrix& head = m.weights().lm_head;
  const double head_weights = static_cast<double>(head.rows * head.cols);
  layer_weights -= head_weights;
  const Qwen3Config& c = m.config();
  const double keys = static_cast<double>(n) * static_cast<double>(n + 1) / 2;
  return 2 * layer_weights * n + 2 * head_weights +
         4.0 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * keys;
}

// f32 multiply-add peak of the threads (GFLOP/s), best of several passes:
// the machine's compute speed at the time of the run, which the noisy host
// changes by up to 2x. A pass lasts a fixed time, not a fixed amount of
// work, so a slow machine or a sanitizer build is not held up by it.
double probe_fma_gflop_s(ThreadPool& pool) {
  constexpr double kPassSeconds = 0.03;
  double best = 0;
  std::vector<double> flops(static_cast<size_t>(pool.size()));
  for (int pass = 0; pass < 5; ++pass) {
    Timer t;
    pool.run([&](int id) {
      flops[id] = 0;
      while (t.seconds() < kPassSeconds) flops[id] += simd::fma_peak_work(size_t{1} << 14);
    });
    best = std::max(best, std::accumulate(flops.begin(), flops.end(), 0.0) / t.seconds() / 1e9);
  }
  return best;
}

// The machine's read bandwidth and compute peak, probed before and after the
// timed runs (the host's noise moves both while they run).
struct Probes {
  double read_gb_s, fma_gflop_s;
};
Probes probe_machine(ThreadPool& pool) { return {probe_read_gb_s(pool), probe_fma_gflop_s(pool)}; }

void run_bench(const BenchArgs& a) {
  if (a.prompt_tokens < 1 || a.gen_tokens < 2 || a.reps < 1) usage_fail("bench needs -p >= 1, -n >= 2, --reps >= 1");
  if (a.quality_tokens < 0)
    usage_fail("--quality ", a.quality_tokens, ": give a number of prompt tokens (0: no quality report)");
  const std::string dir = resolve_model_dir(a.model);
  // Checked before the minutes of probes and timing, not after.
  const int64_t context = load_qwen3_config(dir + "/config.json").max_position_embeddings;
  if (a.prompt_tokens > context || a.gen_tokens > context - a.prompt_tokens)  // no sum: both may be near 2^63
    fail("-p ", a.prompt_tokens, " plus -n ", a.gen_tokens, " exceeds the model's context of ", context, " tokens");
  if (a.quality_tokens > context)
    fail("--quality ", a.quality_tokens, " exceeds the model's context of ", context, " tokens");
  if (a.quality_tokens > 0 && stored_quant_format(dir + "/config.json"))
    fail("--quality compares with the checkpoint as stored, and ", dir,
         " is already quantized (it would be compared with itself): run it on the float checkpoint with --weights "
         "q8|q4");
  const LoadOptions load_options = a.load.options();
  ThreadPool pool(load_options.threads);
  const Probes before = probe_machine(pool);
  reset_peak_rss();
  // Cold start: load, then the first token of a 5-token prompt (which pages
  // in every weight once).
  Timer load_timer;
  auto model = Qwen3Model::load(dir, load_options);
  const double load_s = load_timer.seconds();
  GenerationOptions opts;
  opts.max_new_tokens = 1;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;
  Session(*model, pool).generate(bench_prompt(5), opts, nullptr);
  const double first_token_s = load_timer.seconds();

  const std::vector<int32_t> prompt = bench_prompt(a.prompt_tokens);
  opts.max_new_tokens = a.gen_tokens;

  // The runs share one session (its KV cache and buffers, reset between
  // runs), as llama-bench shares its context: after the first, they time the
  // forward passes, not the first touch of fresh memory (~23k page faults for
  // a 512-token prompt of the 0.6B model).
  std::vector<double> pp, tg;
  Session session(*model, pool);
  // A warm-up prefill of the timed prompt, as llama-bench runs one: the
  // first touch of mapped weights is a load cost, and a mixture of experts
  // touches most of its experts only with a prompt this long.
  GenerationOptions warm_up = opts;
  warm_up.max_new_tokens = 1;
  session.generate(prompt, warm_up, nullptr);
  for (int r = 0; r < a.reps; ++r) {
    session.reset();
    const GenerationResult res = session.generate(prompt, opts, nullptr);
    pp.push_back(res.prefill_tok_s());
    tg.push_back(res.decode_tok_s());
    if (!a.json)
      std::fprintf(stderr, "run %d: pp%lld %.1f tok/s, tg%lld %.2f tok/s\n", r + 1,
                   static_cast<long long>(a.prompt_tokens), pp.back(), static_cast<long long>(a.gen_tokens), tg.back());
  }
  const Stats P = stats(pp), T = stats(tg);
  const double peak_rss = peak_rss_mib();  // before the second probe's buffer
  const Probes after = probe_machine(pool);
  const double probe = (before.read_gb_s + after.read_gb_s) / 2,
               fma_peak = (before.fma_gflop_s + after.fma_gflop_s) / 2;
  // The memory budget of the targets: weights + the KV cache of the sequence + 150 MB.
  const KvCache kv = model->make_cache();
  const double kv_mib = static_cast<double>(a.prompt_tokens + a.gen_tokens) * model->config().num_hidden_layers * 2 *
                        model->config().num_key_value_heads * model->config().head_dim * dtype_size(kv.dtype()) /
                        1048576.0;
  const double weights_mib = static_cast<double>(model->weight_bytes()) / 1048576.0;
  // A decode step also reads the KV cache: at the mean context of the decode phase.
  const Qwen3Config& c = model->config();
  const double kv_read = static_cast<double>(a.prompt_tokens + a.gen_tokens / 2) * c.num_hidden_layers * 2 *
                         c.num_key_value_heads * c.head_dim * dtype_size(kv.dtype());
  const double gb_per_token = (decode_weight_bytes(*model) + kv_read) / 1e9;
  const double tg_gb_s = T.median * gb_per_token;
  const double pp_gflop_s = P.median * prefill_flops(*model, a.prompt_tokens) / a.prompt_tokens / 1e9;
  const BuildInfo build = build_info();
  // What the matrices are, whether stored so or converted at load (--weights auto names nothing).
  const std::string weights = weight_format_name(model->weights().layers.at(0).q_proj.format);
  nlohmann::ordered_json j = {{"model", dir},
                              {"qinfer_version", build.version},
                              {"qinfer_commit", build.commit},
                              {"simd_target", build.simd_target},
                              {"simd_compiled", build.simd_compiled},
                              {"int8_dot", build.int8_dot},
                              {"bf16_products", build.bf16_products},
                              {"amx", build.amx},
                              {"threads", pool.size()},
                              {"prompt_tokens", a.prompt_tokens},
                              {"gen_tokens", a.gen_tokens},
                              {"reps", a.reps},
                              {"pp_tok_s", P.median},
                              {"pp_tok_s_min", P.min},
                              {"pp_tok_s_max", P.max},
                              {"pp_gflop_s", pp_gflop_s},
                              {"fma_peak_gflop_s", fma_peak},
                              {"fma_peak_gflop_s_before_after", {before.fma_gflop_s, after.fma_gflop_s}},
                              {"pp_peak_pct", 100.0 * pp_gflop_s / fma_peak},
                              {"tg_tok_s", T.median},
                              {"tg_tok_s_min", T.min},
                              {"tg_tok_s_max", T.max},
                              {"decode_gb_per_token", gb_per_token},
                              {"tg_gb_s", tg_gb_s},
                              {"probe_gb_s", probe},
                              {"probe_gb_s_before_after", {before.read_gb_s, after.read_gb_s}},
                              {"roofline_tok_s", probe / gb_per_token},
                              {"roofline_pct", 100.0 * tg_gb_s / probe},
                              {"weights", weights},
                              {"fast_prefill", a.load.fast_prefill},
                              {"lora", a.load.lora},
                              {"kv", a.load.kv},
                              {"load_s", load_s},
                              {"first_token_s", first_token_s},
                              {"weights_mib", weights_mib},
                              {"kv_mib", kv_mib},
                              {"peak_rss_mib", peak_rss},
                              {"rss_budget_mib", weights_mib + kv_mib + 150}};
  if (a.quality_tokens > 0) j["quality"] = quality_report(*model, dir, a.quality_tokens, pool);
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  const bool integer_weights = weights == "q8" || weights == "q4";
  std::string adapters;
  for (const std::string& d : a.load.lora) adapters += (adapters.empty() ? ", LoRA adapters " : ", ") + d;
  std::printf("model        %s (%d threads, weights %s%s%s%s, KV cache %s, kernels %s)\n", dir.c_str(), pool.size(),
              weights.c_str(), a.load.fast_prefill ? (" with bf16 products: " + build.bf16_products).c_str() : "",
              integer_weights ? (" with integer dot products: " + build.int8_dot).c_str() : "", adapters.c_str(),
              a.load.kv.c_str(), build.simd_target.c_str());
  std::printf("prefill      pp%lld  %8.1f tok/s  (min %.1f, max %.1f, %d runs)\n",
              static_cast<long long>(a.prompt_tokens), P.median, P.min, P.max, a.reps);
  std::printf(
      "compute      prefill %.1f GFLOP/s; f32 FMA probe %.1f GFLOP/s (%.1f before, %.1f after) -> %.0f%% of peak\n",
      pp_gflop_s, fma_peak, before.fma_gflop_s, after.fma_gflop_s, 100.0 * pp_gflop_s / fma_peak);
  std::printf("decode       tg%lld  %8.2f tok/s  (min %.2f, max %.2f)\n", static_cast<long long>(a.gen_tokens),
              T.median, T.min, T.max);
  std::printf(
      "bandwidth    %.3f GB/token (weights %.3f + KV %.3f) x %.2f tok/s = %.1f GB/s; read probe %.1f GB/s "
      "(%.1f before, %.1f after) -> %.0f%% of roofline (%.1f tok/s)\n",
      gb_per_token, decode_weight_bytes(*model) / 1e9, kv_read / 1e9, T.median, tg_gb_s, probe, before.read_gb_s,
      after.read_gb_s, 100.0 * tg_gb_s / probe, probe / gb_per_token);
  std::printf("load         %.3f s, first token of a 5-token prompt at %.3f s\n", load_s, first_token_s);
  std::printf("memory       peak RSS %.0f MiB (weights %.0f + KV %.0f + 150 = %.0f MiB budget)\n", peak_rss,
              weights_mib, kv_mib, weights_mib + kv_mib + 150);
  if (j.contains("quality"))
    for (const char* path : {"prefill", "decode"}) {
      const auto& q = j["quality"][path];
      char clear[64] = "none with margin >= 1";
      if (!q["clear_top1_agreement"].is_null())
        std::snprintf(clear, sizeof clear, "%.1f%% of %lld with margin >= 1",
                      100 * q["clear_top1_agreement"].get<double>(), q["clear_positions"].get<long long>());
      std::printf(
          "quality      %-7s vs as stored, %lld positions: top-1 agreement %.1f%% (%s), mean KL %.4f, rms logit "
          "error %.4f\n",
          path, q["positions"].get<long long>(), 100 * q["top1_agreement"].get<double>(), clear,
          q["mean_kl"].get<double>(), q["rms_logit_error"].get<double>());
    }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Measure prefill and decode tokens/s, decode GB/s against a bandwidth probe");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory or hub id (see make-test-model)")->required();
  cmd->add_option("-p,--prompt-tokens", a->prompt_tokens, "Prompt length for the prefill measurement")
      ->capture_default_str();
  cmd->add_option("-n,--gen-tokens", a->gen_tokens, "Tokens decoded after the prompt")->capture_default_str();
  cmd->add_option("--reps", a->reps, "Repetitions (median and spread are reported)")->capture_default_str();
  a->load.add_options(cmd);
  cmd->add_option("--quality", a->quality_tokens,
                  "After timing: compare logits with the checkpoint as stored over this many prompt tokens "
                  "(top-1 agreement, KL; prefill and decode)");
  cmd->add_flag("--json", a->json, "Print one JSON object (pp_tok_s, tg_tok_s, roofline_pct, ...)");
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace qinfer::cli
