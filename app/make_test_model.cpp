// qinfer make-test-model: a random-weight checkpoint with real shapes, for
// benchmarks without a download; with --script, one whose greedy reply is a
// given text, for testing what reads replies (reasoning and tool-call splits).
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include "commands.h"
#include "embedded_tokenizer.h"
#include "model/published_formats.h"
#include "model/test_model.h"
#include "output_dir.h"
#include "text/tokenizer.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

// Qwen3-Embedding's tokenizer.json: Qwen3's, whose post-processor appends
// <|endoftext|>. Spliced into the text: parsing and writing the whole
// vocabulary as JSON would take seconds.
std::string embedding_tokenizer_json() {
  const std::string_view qwen3 = embedded_tokenizer_json();
  const std::string_view byte_level =
      R"("post_processor":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})";
  const size_t at = qwen3.find(byte_level);
  if (at == std::string_view::npos) fail("internal: the embedded tokenizer.json has no ByteLevel post_processor");
  const char* appending =
      R"("post_processor":{"type":"TemplateProcessing",)"
      R"("single":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|endoftext|>","type_id":0}}],)"
      R"("pair":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|endoftext|>","type_id":0}},)"
      R"({"Sequence":{"id":"B","type_id":1}},{"SpecialToken":{"id":"<|endoftext|>","type_id":1}}],)"
      R"("special_tokens":{"<|endoftext|>":{"id":"<|endoftext|>","ids":[151643],"tokens":["<|endoftext|>"]}}})";
  std::string out(qwen3.substr(0, at));
  out += appending;
  out += qwen3.substr(at + byte_level.size());
  return out;
}

}  // namespace

void add_make_test_model_command(CLI::App& app) {
  struct Args {
    std::string preset = "qwen3-0.6b", dtype = "bf16", out;
    std::optional<std::string> script;  // "" is a script too: an empty reply
    uint64_t seed = 0;
    std::optional<int64_t> layers, lora_rank;
    bool force = false, embedding = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "make-test-model",
      "Write a RANDOM-weight Qwen3 checkpoint (HF layout, real shapes, the Qwen3 tokenizer) for benchmarks; with "
      "--script, one whose greedy reply is a given text, for tests");
  cmd->add_option("--preset", a->preset,
                  "qwen3-0.6b, qwen3-30b-a3b (a mixture of experts: 61 GB in bf16), tiny or tiny-moe")
      ->capture_default_str();
  cmd->add_option("--dtype", a->dtype,
                  "bf16, f16, f32, fp8, awq or gptq: the bf16 or f16 weights as Qwen's -FP8 checkpoints store them "
                  "(E4M3, a scale per 128 x 128 block), its -AWQ ones (4-bit codes and zeros, an f16 scale per 128 "
                  "inputs) or its -GPTQ-Int4 ones (symmetric 4-bit codes, an f16 scale per 128 inputs)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Output directory (created; an existing one only with --force)")->required();
  cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  cmd->add_option("--layers", a->layers,
                  "Fewer (or more) layers than the preset, the same shapes: a model that fits where the real one "
                  "does not, to measure per-layer speed");
  cmd->add_flag("--force", a->force, "Overwrite the checkpoint files in an existing --out directory");
  cmd->add_flag("--embedding", a->embedding,
                "Lay it out as Qwen3-Embedding ships: the backbone's tensors alone (no \"model.\" prefix, no "
                "lm_head.weight) and a tokenizer that appends <|endoftext|>");
  cmd->add_option("--lora", a->lora_rank,
                  "Instead of a model: a PEFT LoRA adapter for the preset (every projection at rank N, lora_alpha "
                  "2N, random nonzero lora_A and lora_B), to run with --lora");
  cmd->add_option("--script", a->script,
                  "Instead of random weights: weights whose greedy continuation of a prompt ending in \"\\n\" (as a "
                  "chat template's generation prompt does) is TEXT's tokens, then <|im_end|>; for testing reply "
                  "parsing. A token may recur in \"\\n\" + TEXT only before the same next token");
  cmd->callback([a] {
    // fp8, awq and gptq: the weights drawn as the torch_dtype Qwen's configs name, then rewritten.
    DType t;
    std::optional<PublishedFormat> published;
    if (a->dtype == "bf16" || a->dtype == "fp8")
      t = DType::BF16;
    else if (a->dtype == "f16" || a->dtype == "awq" || a->dtype == "gptq")
      t = DType::F16;
    else if (a->dtype == "f32")
      t = DType::F32;
    else
      usage_fail("--dtype must be bf16, f16, f32, fp8, awq or gptq, not '", a->dtype, "'");
    if (a->dtype == "fp8") published = PublishedFormat::Fp8;
    if (a->dtype == "awq") published = PublishedFormat::Awq;
    if (a->dtype == "gptq") published = PublishedFormat::Gptq;
    Qwen3Config config;
    try {
      config = test_model_preset(a->preset);
    } catch (const Error& e) {
      usage_fail("--preset: ", e.what());
    }
    if (a->layers) {
      if (*a->layers < 1 || *a->layers > 1024) usage_fail("--layers must be between 1 and 1024, not ", *a->layers);
      config.num_hidden_layers = *a->layers;
    }
    if (a->lora_rank) {
      if (*a->lora_rank < 1 || *a->lora_rank > 4096)
        usage_fail("--lora must be a rank from 1 to 4096, not ", *a->lora_rank);
      if (a->script || a->embedding || a->dtype != "bf16")
        usage_fail("--lora writes a bf16 adapter alone: --script, --embedding and --dtype do not go with it");
      OutputDir out(a->out, a->force);
      TestLoraAdapter adapter;
      adapter.lora.r = *a->lora_rank;
      adapter.lora.lora_alpha = 2.0 * static_cast<double>(*a->lora_rank);
      write_test_lora_adapter(out.staging(), config, adapter, a->seed);
      out.keep();
      std::printf("wrote %s (a LoRA adapter of rank %lld for %s, seed %llu; random weights)\n", a->out.c_str(),
                  static_cast<long long>(*a->lora_rank), a->preset.c_str(), static_cast<unsigned long long>(a->seed));
      return;
    }
    std::vector<int32_t> chain;
    if (a->script) {
      utf8::require_valid(*a->script, "--script");  // else the tokenizer refuses it, naming no flag
      // The chain starts at "\n": the last token of "<|im_start|>assistant\n".
      const Tokenizer tokenizer = Tokenizer::from_json(embedded_tokenizer_json());
      chain = tokenizer.encode("\n");
      const std::vector<int32_t> script = tokenizer.encode(*a->script);
      chain.insert(chain.end(), script.begin(), script.end());
      const int32_t eos = config.eos_token_ids.at(0);
      if (chain.back() != eos) chain.push_back(eos);
      for (size_t i = 0; i + 1 < chain.size(); ++i)  // greedy decoding would stop there
        for (const int32_t end : config.eos_token_ids)
          if (chain[i] == end)
            fail("--script: the text holds an end of sequence (id ", end,
                 ") before its end; nothing after it would "
                 "be generated");
    }
    if (a->embedding && a->script) usage_fail("--embedding and --script do not go together");
    if (a->script && published) usage_fail("--script writes exact weights: --dtype bf16, f16 or f32");
    OutputDir out(a->out, a->force);
    if (chain.empty()) {
      write_test_model(out.staging(), config, t, a->seed, a->embedding ? Qwen3Layout{"", false} : Qwen3Layout{});
      if (published) rewrite_checkpoint_as(out.staging(), *published);
    } else {
      write_scripted_test_model(out.staging(), config, t, chain);
    }
    write_file(out.staging() + "/tokenizer.json",
               a->embedding ? embedding_tokenizer_json() : std::string(embedded_tokenizer_json()));
    write_file(out.staging() + "/tokenizer_config.json", embedded_tokenizer_config_json());
    out.keep();
    if (chain.empty()) {
      std::printf("wrote %s (%s, %s, seed %llu; random weights)\n", a->out.c_str(), a->preset.c_str(), a->dtype.c_str(),
                  static_cast<unsigned long long>(a->seed));
    } else {
      std::printf("wrote %s (%s, %s; scripted: greedy decoding after \"\\n\" follows %zu tokens)\n", a->out.c_str(),
                  a->preset.c_str(), a->dtype.c_str(), chain.size() - 1);
    }
  });
}

}  // namespace qinfer::cli
