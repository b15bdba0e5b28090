// qinfer rerank: how relevant each document is to a query, as Qwen3-Reranker
// scores it through transformers (runtime/rerank.h): the probability of
// "yes" after its judging prompt. Documents are the arguments or stdin
// lines; one JSON line each, in input order (sort by relevance_score to rank).
#include <nlohmann/json.hpp>

#include "commands.h"
#include "load_flags.h"
#include "prompt_only_run.h"
#include "runtime/rerank.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

using nlohmann::ordered_json;

struct RerankArgs {
  std::string model;
  std::string query;
  std::vector<std::string> documents;
  std::string instruct{kDefaultRerankInstruction};
  LoadFlags load;
  EngineFlags engine;
};

void run_rerank(const RerankArgs& a) {
  a.engine.validate();
  utf8::require_valid(a.query, "the query (-q)");
  utf8::require_valid(a.instruct, "the task (--instruct)");
  const std::vector<std::string> documents = texts_or_stdin_lines(a.documents);
  const LoadOptions load_options = a.load.options();
  const ModelBundle bundle = load_model_bundle(a.model, load_options);
  const RerankPrompt prompt(bundle.require_tokenizer(), *bundle.model);
  // The query is every document's: too long for the context, it is the command's error, not each document's.
  const int64_t context = bundle.model->config().max_position_embeddings;
  if (const size_t fixed = prompt.input_ids(a.instruct, a.query, "").size(); static_cast<int64_t>(fixed) >= context)
    fail("with the query (-q) and the task (--instruct), the judging prompt takes ", fixed,
         " tokens before any document: the model's context is ", context);
  PromptOnlyRun run;
  run.noun = "documents";
  run.ids_of = [&](const std::string& document) { return prompt.input_ids(a.instruct, a.query, document); };
  run.add = [&](engine::Engine& engine, const std::vector<int32_t>& ids) {
    return prompt.uses_classifier() ? engine.add_embedding(ids) : engine.add_scoring(ids, prompt.score_ids());
  };
  run.describe = [&](ordered_json& line, std::span<const float> output) {
    line["relevance_score"] = prompt.score(output);
  };
  run_prompt_only(bundle, load_options.threads, a.engine, documents, run);
}

}  // namespace

void add_rerank_command(CLI::App& app) {
  auto a = std::make_shared<RerankArgs>();
  CLI::App* cmd = app.add_subcommand(
      "rerank",
      "Score documents against a query through the batching engine (Qwen3-Reranker: the probability of \"yes\" after "
      "its judging prompt): one JSON line per document in input order, {\"index\", \"prompt_tokens\", "
      "\"relevance_score\"} or {\"index\", \"error\"}");
  cmd->add_option("-m,--model", a->model,
                  "Checkpoint directory, or a hub id (Qwen/Qwen3-Reranker-0.6B) in the HF cache")
      ->required();
  cmd->add_option("-q,--query", a->query, "The query the documents are judged against")->required();
  cmd->add_option("document", a->documents, "Documents to score; without any, one document per line of standard input");
  cmd->add_option("--instruct", a->instruct, "The task in the prompt's <Instruct> line")->capture_default_str();
  a->engine.add_options(cmd);
  a->load.add_options(cmd);
  cmd->callback([a] { run_rerank(*a); });
}

}  // namespace qinfer::cli
