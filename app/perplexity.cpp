// qinfer perplexity: how well the model predicts a text, measured as
// llama.cpp's llama-perplexity measures it, so the figures compare: the
// text's tokens cut into chunks of --ctx, each chunk a request on the
// batching engine that asks for its prompt's log-probabilities, and the
// second half of each chunk scored (the first half is its context, so every
// scored token has at least ctx/2 tokens before it). PPL = exp(mean negative
// log-likelihood of the scored tokens), with its standard error. The chunks
// run together; batch invariance makes the figure the same at any --parallel.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine/engine.h"
#include "engine_flags.h"
#include "load_flags.h"
#include "runtime/model_bundle.h"
#include "text_file_flag.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

struct PerplexityArgs {
  std::string model, file;
  int64_t ctx = 512, chunks = 0;
  bool json = false;
  LoadFlags load;
  EngineFlags engine;
};

// Negative log-likelihoods of the scored tokens: their count, sum and sum of squares.
struct NllSums {
  int64_t count = 0;
  double sum = 0, sum_sq = 0;
  void add(double nll) {
    ++count;
    sum += nll;
    sum_sq += nll * nll;
  }
  double mean() const { return sum / static_cast<double>(count); }
  double ppl() const { return std::exp(mean()); }
  // The standard error of the mean, carried to the perplexity (d exp(x) = exp(x) dx), as llama.cpp reports it.
  double ppl_error() const {
    if (count < 2) return 0;
    const double variance = std::max(0.0, sum_sq / static_cast<double>(count) - mean() * mean());
    return ppl() * std::sqrt(variance / static_cast<double>(count - 1));
  }
};

void run_perplexity(const PerplexityArgs& a) {
  a.engine.validate();
  if (a.ctx < 4) usage_fail("--ctx must be at least 4 tokens (half of each chunk is context), got ", a.ctx);
  if (a.chunks < 0) usage_fail("--chunks must be positive (or 0: all of them), got ", a.chunks);
  const std::string text = read_text_flag("--file", a.file, "the text");
  const LoadOptions load_options = a.load.options();
  const ModelBundle bundle = load_model_bundle(a.model, load_options);
  if (a.ctx + 1 > bundle.model->config().max_position_embeddings)
    fail("--ctx ", a.ctx, " is more than the model's ", bundle.model->config().max_position_embeddings - 1,
         " positions a prompt may take");
  // Special tokens' text (<|im_end|>) as plain text, as llama-perplexity reads a file (no --parse-special).
  const std::vector<int32_t> tokens = bundle.require_tokenizer().encode(text, /*allow_special=*/false);
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  if (n_tokens < a.ctx)
    fail("--file ", a.file, " has ", n_tokens, " tokens; a chunk takes --ctx ", a.ctx,
         ": give a longer text or a smaller --ctx");
  const int64_t n_chunks = a.chunks > 0 ? std::min(a.chunks, n_tokens / a.ctx) : n_tokens / a.ctx;
  // One scored token has no standard error (it printed "+/- 0"; llama-perplexity refuses the count).
  if (const int64_t scored = n_chunks * (a.ctx - 1 - a.ctx / 2); scored < 2)
    fail(n_chunks, " chunk(s) of --ctx ", a.ctx, " score ", scored,
         " token; the estimate's standard error needs 2: give a longer text, a larger --ctx or more --chunks");

  ThreadPool pool(load_options.threads);
  // A prompt of ctx tokens and no token after it: a context of ctx + 1.
  engine::Engine engine(*bundle.model, pool, a.engine.engine_options(*bundle.model, a.ctx + 1));
  if (engine.context() < a.ctx + 1)
    fail("the KV pool (--kv-blocks/--kv-mem) holds ", engine.context(), " positions; a chunk of --ctx ", a.ctx,
         " needs ", a.ctx + 1);
  GenerationOptions options;
  options.max_new_tokens = 0;
  options.prompt_logprobs = 0;
  std::vector<int64_t> handles;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const auto first = tokens.begin() + c * a.ctx;
    handles.push_back(engine.add(std::vector<int32_t>(first, first + a.ctx), options));
  }
  // Scored: positions ctx/2 .. ctx-2, whose logits predict tokens ctx/2 + 1 .. ctx-1 of the chunk.
  const int64_t first_scored = a.ctx / 2;
  NllSums sums;
  Timer timer;
  int64_t reported = 0;
  for (bool stepped = true; stepped || reported < n_chunks;) {
    stepped = engine.step();
    // Chunks in order as they finish, each with the estimate so far (llama.cpp's "[1]7.12,[2]...").
    for (; reported < n_chunks && engine.finished(handles[static_cast<size_t>(reported)]); ++reported) {
      const int64_t h = handles[static_cast<size_t>(reported)];
      const GenerationResult& r = engine.result(h);
      if (r.reason == StopReason::Error) fail(r.error);
      if (static_cast<int64_t>(r.prompt_logprobs.size()) != a.ctx - 1)
        fail("chunk ", reported + 1, " gave ", r.prompt_logprobs.size(), " log-probabilities for ", a.ctx - 1,
             " tokens");
      for (int64_t j = first_scored; j < a.ctx - 1; ++j) sums.add(-r.prompt_logprobs[static_cast<size_t>(j)].logprob);
      engine.erase(h);
      std::fprintf(stderr, "[%lld]%.4f,", static_cast<long long>(reported + 1), sums.ppl());
    }
    if (!stepped && reported < n_chunks) fail("the engine stopped with ", n_chunks - reported, " chunks unfinished");
  }
  const double seconds = timer.seconds();
  const double computed = static_cast<double>(n_chunks * a.ctx);
  std::fprintf(stderr, "\n[%lld chunks of %lld tokens (%lld of the text's %lld), %lld scored, in %.2f s: %.1f tok/s]\n",
               static_cast<long long>(n_chunks), static_cast<long long>(a.ctx),
               static_cast<long long>(n_chunks * a.ctx), static_cast<long long>(n_tokens),
               static_cast<long long>(sums.count), seconds, seconds > 0 ? computed / seconds : 0.0);
  if (a.json) {
    const nlohmann::ordered_json out = {
        {"ppl", sums.ppl()}, {"ppl_error", sums.ppl_error()}, {"mean_nll", sums.mean()}, {"chunks", n_chunks},
        {"ctx", a.ctx},      {"scored_tokens", sums.count},   {"text_tokens", n_tokens}, {"seconds", seconds}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", sums.ppl(), sums.ppl_error());
  }
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto a = std::make_shared<PerplexityArgs>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity",
      "Perplexity of a text as llama.cpp's llama-perplexity measures it: chunks of --ctx tokens, the second half of "
      "each scored; prints \"Final estimate: PPL = X +/- E\" (or --json)");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")
      ->required();
  cmd->add_option("-f,--file", a->file, "The text (e.g. wikitext-2's wiki.test.raw); - reads standard input")
      ->required();
  cmd->add_option("-c,--ctx", a->ctx, "Tokens per chunk")->capture_default_str();
  cmd->add_option("--chunks", a->chunks, "Score the first N chunks only (0: all)")->capture_default_str();
  cmd->add_flag("--json", a->json,
                "Print one JSON object: ppl, ppl_error, mean_nll, chunks, ctx, scored_tokens, text_tokens, seconds");
  a->engine.add_options(cmd);
  a->load.add_options(cmd);
  cmd->callback([a] { run_perplexity(*a); });
}

}  // namespace qinfer::cli
