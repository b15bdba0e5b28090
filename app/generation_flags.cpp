#include "generation_flags.h"

#include <cstdio>

#include "usage_error.h"
#include "util/available_memory.h"
#include "util/error.h"
#include "util/utf8.h"

namespace qinfer::cli {

void GenerationFlags::add_options(CLI::App* cmd, const char* max_tokens_help) {
  cmd->add_option("-m,--model", model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")
      ->required();
  max_tokens_flag = cmd->add_option("-n,--max-tokens", max_tokens, max_tokens_help)->capture_default_str();
  cmd->add_option("--ctx", ctx,
                  "Context length: prompt + generated tokens (and the KV memory); 0 = the model's maximum")
      ->capture_default_str();
  load_flags.add_options(cmd);
  cmd->add_option("--stop", stops, "Stop when this text appears (not printed); may be repeated")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s.empty()) return "a stop string may not be empty";
            // Stop strings are text, as the server's (JSON) are: half a character would stop inside one.
            if (const size_t at = utf8::first_invalid(s); at != std::string::npos)
              return "the stop string is not valid UTF-8 (byte offset " + std::to_string(at) + ")";
            return "";
          },
          ""));
  sampling.add_options(cmd);
  draft.add_options(cmd);
}

ModelBundle GenerationFlags::load(int& threads_used) const {
  if (max_tokens < 1 && max_tokens != -1)
    usage_fail("-n ", max_tokens, ": give at least 1 token, or -1 to generate until eos or the context is full");
  if (ctx < 0) usage_fail("--ctx ", ctx, ": the context must be at least 1 token (or 0: the model's maximum)");
  draft.validate();
  const LoadOptions options = load_flags.options();
  threads_used = options.threads;
  ModelBundle bundle = load_model_bundle(model, options);
  draft.load_model(bundle, options);
  context(bundle);
  if (!bundle.has_generation_config && !sampling.temperature)
    std::fprintf(stderr,
                 "qinfer: note: %s has no generation_config.json: greedy decoding, as transformers does "
                 "(--temp to sample)\n",
                 bundle.dir.c_str());
  return bundle;
}

int64_t GenerationFlags::context(const ModelBundle& bundle) const {
  const int64_t model_max = bundle.model->config().max_position_embeddings;
  if (ctx > model_max)
    fail("--ctx ", ctx, " is more than the model's context of ", model_max, " tokens (max_position_embeddings)");
  return ctx > 0 ? ctx : model_max;
}

engine::EngineOptions GenerationFlags::engine_options(const ModelBundle& bundle) const {
  engine::EngineOptions o;
  o.max_running = 1;
  o.context = context(bundle);
  o.kv_memory_limit = default_kv_memory_limit();
  draft.apply(o, bundle);
  return o;
}

}  // namespace qinfer::cli
