// qinfer generate: one prompt in, generated tokens out (streamed), with timing.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/hf_config.h"
#include "io/model_dir.h"
#include "model/qwen3.h"
#include "runtime/generator.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt_ids;
  int64_t max_new_tokens = 128;
  int threads = 0;
  bool ignore_eos = false;
  bool json = false;
  std::string logits_out;
  std::optional<float> temperature, top_p, min_p, repeat_penalty;
  std::optional<int> top_k;
  float presence_penalty = 0, frequency_penalty = 0;
  uint64_t seed = 0;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string item = s.substr(i, j - i);
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      fail("--prompt-ids: '", item, "' is not a token id (expected comma-separated non-negative integers)");
    }
    i = j + 1;
  }
  return ids;
}

// generation_config.json's defaults, overridden by what the user passed.
SamplingParams sampling_params(const GenerateArgs& a, const GenerationConfig& g) {
  SamplingParams p;
  const bool sample = g.do_sample.value_or(true);
  p.temperature = a.temperature.value_or(sample ? g.temperature.value_or(1.0f) : 0.0f);
  p.top_k = a.top_k.value_or(g.top_k.value_or(0));
  p.top_p = a.top_p.value_or(g.top_p.value_or(1.0f));
  p.min_p = a.min_p.value_or(g.min_p.value_or(0.0f));
  p.repetition_penalty = a.repeat_penalty.value_or(g.repetition_penalty.value_or(1.0f));
  p.presence_penalty = a.presence_penalty;
  p.frequency_penalty = a.frequency_penalty;
  p.seed = a.seed;
  return p;
}

void write_logits(const std::string& path, std::span<const float> logits) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, ": cannot create the logits file");
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out.flush()) fail(path, ": write failed");
}

void run_generate(const GenerateArgs& a) {
  const std::string dir = resolve_model_dir(a.model);
  Timer load_timer;
  auto model = Qwen3Model::load(dir);
  const GenerationConfig gen = load_generation_config(dir + "/generation_config.json");
  const double load_s = load_timer.seconds();

  const std::vector<int32_t> prompt = parse_ids(a.prompt_ids);
  if (prompt.empty()) fail("no prompt: pass --prompt-ids");
  const int64_t context = model->config().max_position_embeddings;
  if (a.max_new_tokens < 1) fail("-n must be at least 1");
  if (static_cast<int64_t>(prompt.size()) + a.max_new_tokens > context)
    fail("the prompt (", prompt.size(), " tokens) plus -n ", a.max_new_tokens, " exceeds the context length of ",
         context, " tokens; use -n ", std::max<int64_t>(0, context - static_cast<int64_t>(prompt.size())), " or less");

  GenerationOptions opts;
  opts.max_new_tokens = a.max_new_tokens;
  opts.sampling = sampling_params(a, gen);
  opts.eos_ids = gen.eos_token_ids.empty() ? model->config().eos_token_ids : gen.eos_token_ids;
  opts.ignore_eos = a.ignore_eos;

  ThreadPool pool(a.threads);
  Session session(*model, pool);
  auto on_token = [&](int32_t id) {
    if (!a.json) {
      std::printf("%d ", id);
      std::fflush(stdout);
    }
    return true;
  };
  const GenerationResult r = session.generate(prompt, opts, on_token);
  if (!a.logits_out.empty()) write_logits(a.logits_out, session.prompt_logits());

  if (a.json) {
    nlohmann::json j = {{"prompt_ids", prompt},
                        {"ids", r.ids},
                        {"stop_reason", stop_reason_name(r.reason)},
                        {"prompt_tokens", r.prompt_tokens},
                        {"generated_tokens", r.ids.size()},
                        {"load_s", load_s},
                        {"prefill_s", r.prefill_s},
                        {"decode_s", r.decode_s},
                        {"prefill_tok_s", r.prefill_tok_s()},
                        {"decode_tok_s", r.decode_tok_s()},
                        {"threads", pool.size()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%zu tokens, %s; prefill %.1f tok/s, decode %.1f tok/s, load %.2f s]\n", r.ids.size(),
                 stop_reason_name(r.reason), r.prefill_tok_s(), r.decode_tok_s(), load_s);
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt, streaming tokens as they come");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")->required();
  cmd->add_option("--prompt-ids", a->prompt_ids, "Prompt as comma-separated token ids, e.g. 785,6722,315");
  cmd->add_option("-n,--max-tokens", a->max_new_tokens, "Maximum number of tokens to generate")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all hardware threads)");
  cmd->add_option("--temp", a->temperature, "Temperature; 0 = greedy (default: generation_config.json)");
  cmd->add_option("--top-k", a->top_k, "Keep the k most likely tokens; 0 = off");
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling threshold; 1 = off");
  cmd->add_option("--min-p", a->min_p, "Drop tokens below min_p * p(most likely); 0 = off");
  cmd->add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (HF semantics); 1 = off");
  cmd->add_option("--presence-penalty", a->presence_penalty, "Presence penalty (OpenAI semantics)");
  cmd->add_option("--frequency-penalty", a->frequency_penalty, "Frequency penalty (OpenAI semantics)");
  cmd->add_option("--seed", a->seed, "Random seed for sampling")->capture_default_str();
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", a->json, "Print one JSON object: prompt_ids, ids, text, stop_reason, timing");
  cmd->add_option("--logits-out", a->logits_out, "Write the last prompt position's logits (f32 little-endian) here");
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace qinfer::cli
