#include "engine_flags.h"

#include <cmath>

#include "usage_error.h"
#include "util/available_memory.h"
#include "util/error.h"

namespace qinfer::cli {

void EngineFlags::add_options(CLI::App* cmd) {
  cmd->add_option("--parallel", parallel, "Sequences decoding at once")->capture_default_str();
  cmd->add_option("--max-batch-tokens", max_batch_tokens, "Tokens per engine step (prompts prefill in chunks of it)")
      ->capture_default_str();
  cmd->add_option("--kv-blocks", kv_blocks,
                  "KV pool size in blocks (0: --parallel full contexts, at most 3/4 of the memory available; "
                  "committed on use)")
      ->capture_default_str();
  cmd->add_option("--kv-mem", kv_mem_mib, "KV pool size in MiB (instead of --kv-blocks)");
  cmd->add_option("--block-size", block_size, "Positions per KV block")->capture_default_str();
}

void EngineFlags::validate() const {
  if (parallel < 1 || parallel > engine::kMaxRunning)
    usage_fail("--parallel must be between 1 and ", engine::kMaxRunning, ", got ", parallel);
  if (max_batch_tokens < 1) usage_fail("--max-batch-tokens must be at least 1");
  if (block_size < 1) usage_fail("--block-size must be at least 1");
  if (kv_blocks < 0) usage_fail("--kv-blocks must be positive (or 0: --parallel full contexts)");
  if (!(kv_mem_mib >= 0 && std::isfinite(kv_mem_mib)))
    usage_fail("--kv-mem must be a positive number of MiB (or 0: sized by --parallel and the memory), got ",
               kv_mem_mib);
  if (kv_blocks > 0 && kv_mem_mib > 0) usage_fail("pass --kv-blocks or --kv-mem, not both");
}

engine::EngineOptions EngineFlags::engine_options(const Qwen3Model& model, int64_t context,
                                                  const Qwen3Model* draft_model) const {
  engine::EngineOptions o{block_size, kv_blocks, max_batch_tokens, parallel, context, default_kv_memory_limit()};
  o.draft_model = draft_model;
  if (kv_mem_mib > 0) {
    const double block_bytes = static_cast<double>(engine::engine_block_bytes(model, o));
    const double blocks = kv_mem_mib * 1024 * 1024 / block_bytes;
    if (blocks < 1)
      fail("--kv-mem ", kv_mem_mib, " MiB holds no KV block (one block of ", block_size, " positions is ",
           block_bytes / (1024 * 1024), " MiB)");
    if (blocks > engine::kMaxPoolBlocks)
      fail("--kv-mem ", kv_mem_mib, " MiB is more than the ", engine::kMaxPoolBlocks, " KV blocks of ", block_size,
           " positions one engine manages (a larger --block-size holds more)");
    o.kv_blocks = static_cast<int32_t>(blocks);
  }
  return o;
}

void DraftFlags::add_options(CLI::App* cmd) {
  tokens_flag =
      cmd->add_option("--draft", tokens,
                      "Speculative decoding: draft up to N tokens a step from earlier text (prompt lookup) and verify "
                      "them in one forward; the output stays the same (0: off)")
          ->capture_default_str();
  model_flag =
      cmd->add_option("--draft-model", model,
                      "Speculative decoding by this smaller model of the same tokenizer (a checkpoint directory or hub "
                      "id, such as Qwen/Qwen3-0.6B for a larger Qwen3): it drafts --draft tokens a step (default " +
                          std::to_string(kModelDraftTokens) + ") instead of prompt lookup; the output stays the same");
  p_min_flag = cmd->add_option("--draft-p-min", p_min,
                               "A --draft-model draft ends at a token the draft model gives less than this probability")
                   ->capture_default_str();
  min_ngram_flag =
      cmd->add_option("--draft-min-ngram", min_ngram, "Shortest run of last tokens looked up for a --draft")
          ->capture_default_str();
  max_ngram_flag = cmd->add_option("--draft-max-ngram", max_ngram, "Longest run of last tokens looked up for a --draft")
                       ->capture_default_str();
}

void DraftFlags::validate() const {
  const auto given = [](const CLI::Option* flag) { return flag && flag->count() > 0; };
  // A hunt finding: an empty one ran without drafts, silently.
  if (model.empty() && given(model_flag)) usage_fail("--draft-model is empty: give the draft model's directory");
  if (!(p_min >= 0 && p_min <= 1)) usage_fail("--draft-p-min must be a probability between 0 and 1, got ", p_min);
  if (!model.empty() && tokens == 0 && given(tokens_flag))
    usage_fail("--draft 0 turns speculative decoding off: leave --draft-model out too");
  if (model.empty() && given(p_min_flag))
    usage_fail("--draft-p-min applies to the drafts of a --draft-model; none was given");
  // Before the n-gram lengths are checked (which named "--draft 0" with a draft model).
  for (const CLI::Option* ngram : {min_ngram_flag, max_ngram_flag}) {
    if (!model.empty() && given(ngram))
      usage_fail(ngram->get_name(), " applies to prompt lookup, which --draft-model replaces");
    if (tokens == 0 && given(ngram))
      usage_fail(ngram->get_name(), " applies to prompt lookup's drafts, which are off: give --draft N too");
  }
  try {
    engine::validate(engine::NgramDraftOptions{tokens, min_ngram, max_ngram});
  } catch (const Error& e) {
    usage_fail("--draft ", tokens, " --draft-min-ngram ", min_ngram, " --draft-max-ngram ", max_ngram, ": ", e.what());
  }
}

std::string DraftFlags::summary(const engine::Engine::DraftStats& stats) const {
  if (!on()) return "";
  return "; drafts: " + std::to_string(stats.accepted) + " of " + std::to_string(stats.drafted) + " tokens accepted";
}

void DraftFlags::load_model(ModelBundle& bundle, LoadOptions options) const {
  if (model.empty()) return;
  options.lora_adapters.clear();
  options.lora_modules.clear();
  try {
    load_draft_model(bundle, model, options);
  } catch (const Error& e) {
    fail("--draft-model ", model, ": ", e.what());  // the message names a file, not which model it belongs to
  }
}

void DraftFlags::apply(engine::EngineOptions& o, const ModelBundle& bundle) const {
  o.draft_model = bundle.draft_model.get();
  o.draft_tokens = tokens > 0 || !o.draft_model ? tokens : kModelDraftTokens;
  o.draft_p_min = p_min;
  o.draft_min_ngram = min_ngram;
  o.draft_max_ngram = max_ngram;
}

}  // namespace qinfer::cli
