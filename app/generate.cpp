// qinfer generate: one prompt in, generated text out (streamed), with timing.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "sampling_options.h"
#include "runtime/model_bundle.h"
#include "runtime/text_generation.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt, prompt_file, prompt_ids;
  int64_t max_new_tokens = 128;
  int threads = 0;
  std::string weights = "auto", kv = "f32";
  bool ignore_eos = false;
  bool json = false;
  std::string logits_out;
  std::vector<std::string> stops;
  SamplingOverrides sampling;
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

void write_logits(const std::string& path, std::span<const float> logits) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, ": cannot create the logits file");
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out.flush()) fail(path, ": write failed");
}

void run_generate(const GenerateArgs& a) {
  const int given = !a.prompt.empty() + !a.prompt_file.empty() + !a.prompt_ids.empty();
  if (given != 1) fail("pass exactly one of -p/--prompt, --prompt-file, --prompt-ids");
  if (a.max_new_tokens < 1) fail("-n must be at least 1");
  const LoadOptions load_options = parse_load_options(a.weights, a.kv, a.threads);
  const ModelBundle bundle = load_model_bundle(a.model, load_options);

  std::vector<int32_t> prompt;
  if (!a.prompt_ids.empty()) {
    prompt = parse_ids(a.prompt_ids);
  } else {
    const std::string text = a.prompt_file.empty() ? a.prompt : read_text_file(a.prompt_file);
    prompt = bundle.require_tokenizer().encode(text);
  }
  if (prompt.empty()) fail("the prompt encodes to no tokens");
  const int64_t context = bundle.model->config().max_position_embeddings;
  if (static_cast<int64_t>(prompt.size()) + a.max_new_tokens > context)
    fail("the prompt (", prompt.size(), " tokens) plus -n ", a.max_new_tokens, " exceeds the context length of ",
         context, " tokens; use -n ", std::max<int64_t>(0, context - static_cast<int64_t>(prompt.size())), " or less");

  GenerationOptions opts;
  opts.max_new_tokens = a.max_new_tokens;
  opts.sampling = a.sampling.apply(bundle.default_sampling());
  opts.eos_ids = bundle.eos_ids();
  opts.ignore_eos = a.ignore_eos;

  ThreadPool pool(a.threads);
  Session session(*bundle.model, pool);
  GenerationResult r;
  std::string text;
  const char* finish;
  if (bundle.tokenizer) {
    const TextGenerationResult t = generate_text(session, *bundle.tokenizer, prompt, opts, a.stops, [&](std::string_view piece) {
      if (!a.json) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      }
      return true;
    });
    r = t.gen;
    text = t.text;
    finish = t.finish_reason();
  } else {
    if (!a.stops.empty()) fail("--stop needs the tokenizer (tokenizer.json) to see text");
    r = session.generate(prompt, opts, [&](int32_t id) {
      if (!a.json) std::printf("%d ", id), std::fflush(stdout);
      return true;
    });
    finish = stop_reason_name(r.reason);
  }
  if (!a.logits_out.empty()) write_logits(a.logits_out, session.prompt_logits());

  if (a.json) {
    nlohmann::ordered_json j = {{"prompt_ids", prompt},
                                {"ids", r.ids},
                                {"finish_reason", finish},
                                {"prompt_tokens", r.prompt_tokens},
                                {"generated_tokens", r.ids.size()},
                                {"load_s", bundle.load_s},
                                {"prefill_s", r.prefill_s},
                                {"decode_s", r.decode_s},
                                {"prefill_tok_s", r.prefill_tok_s()},
                                {"decode_tok_s", r.decode_tok_s()},
                                {"threads", pool.size()}};
    if (bundle.tokenizer) j["text"] = text;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%zu tokens, %s; prefill %.1f tok/s, decode %.1f tok/s, load %.2f s]\n", r.ids.size(), finish,
                 r.prefill_tok_s(), r.decode_tok_s(), bundle.load_s);
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt, streaming text as it comes");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")->required();
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text (encoded with the model's tokenizer, special tokens allowed)");
  cmd->add_option("--prompt-file", a->prompt_file, "Read the prompt text from this file");
  cmd->add_option("--prompt-ids", a->prompt_ids, "Prompt as comma-separated token ids, e.g. 785,6722,315");
  cmd->add_option("-n,--max-tokens", a->max_new_tokens, "Maximum number of tokens to generate")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all hardware threads)");
  cmd->add_option("--weights", a->weights, "Weight format: auto (as stored), bf16, f16, f32, q8, q4 (converted at load)")
      ->capture_default_str();
  cmd->add_option("--kv", a->kv, "KV cache type: f32, f16, bf16")->capture_default_str();
  cmd->add_option("--stop", a->stops, "Stop when this text appears (not printed); may be repeated");
  a->sampling.add_options(cmd);
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", a->json, "Print one JSON object: prompt_ids, ids, text, finish_reason, timing");
  cmd->add_option("--logits-out", a->logits_out, "Write the last prompt position's logits (f32 little-endian) here");
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace qinfer::cli
