// qinfer embed: embeddings of texts through the batching engine, as
// sentence-transformers gives them for Qwen3-Embedding: each text with the
// tokenizer's special tokens (it appends <|endoftext|>), the last position's
// final hidden state, L2-normalized. One JSON line per text, in input order;
// a text that cannot be embedded gets {"error": ...} in its place.
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "load_flags.h"
#include "prompt_only_run.h"
#include "runtime/embedding.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

using nlohmann::ordered_json;

struct EmbedArgs {
  std::string model;
  std::vector<std::string> texts;
  std::optional<std::string> instruct;
  int64_t dimensions = 0;
  bool no_normalize = false;
  LoadFlags load;
  EngineFlags engine;
};

void run_embed(const EmbedArgs& a) {
  a.engine.validate();
  if (a.dimensions < 0) usage_fail("--dimensions must be positive, got ", a.dimensions);
  if (a.instruct) utf8::require_valid(*a.instruct, "the task (--instruct)");
  const std::vector<std::string> texts = texts_or_stdin_lines(a.texts);
  const LoadOptions load_options = a.load.options();
  const ModelBundle bundle = load_model_bundle(a.model, load_options);
  const Tokenizer& tokenizer = bundle.require_tokenizer();
  const int64_t hidden = bundle.model->config().hidden_size;
  if (a.dimensions > hidden) fail("--dimensions ", a.dimensions, " is more than the model's ", hidden);
  PromptOnlyRun run;
  run.ids_of = [&](const std::string& text) {
    return embedding_input_ids(tokenizer, a.instruct ? embedding_query(*a.instruct, text) : text);
  };
  run.add = [](engine::Engine& engine, const std::vector<int32_t>& ids) { return engine.add_embedding(ids); };
  run.describe = [&](ordered_json& line, std::span<const float> hidden_state) {
    line["embedding"] = embedding_vector(hidden_state, a.dimensions, !a.no_normalize);
  };
  run_prompt_only(bundle, load_options.threads, a.engine, texts, run);
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto a = std::make_shared<EmbedArgs>();
  CLI::App* cmd = app.add_subcommand(
      "embed",
      "Embed texts through the batching engine (Qwen3-Embedding: the tokenizer's special tokens, the last position's "
      "final hidden state, L2-normalized): one JSON line per text in input order, {\"index\", \"prompt_tokens\", "
      "\"embedding\"} or {\"index\", \"error\"}");
  cmd->add_option("-m,--model", a->model,
                  "Checkpoint directory, or a hub id (Qwen/Qwen3-Embedding-0.6B) in the HF cache")
      ->required();
  cmd->add_option("text", a->texts, "Texts to embed; without any, one text per line of standard input");
  cmd->add_option("--instruct", a->instruct,
                  "Embed each text as a query for this task: \"Instruct: TASK\\nQuery:TEXT\" (Qwen3-Embedding's "
                  "query form; documents go without it)");
  cmd->add_option("--dimensions", a->dimensions,
                  "Keep the first N values (then normalized): Qwen3-Embedding's Matryoshka sizes (0: all)");
  cmd->add_flag("--no-normalize", a->no_normalize, "The hidden state as it is, not divided by its L2 norm");
  a->engine.add_options(cmd);
  a->load.add_options(cmd);
  cmd->callback([a] { run_embed(*a); });
}

}  // namespace qinfer::cli
