// qinfer embed: embeddings of texts through the batching engine, as
// sentence-transformers gives them for Qwen3-Embedding: each text with the
// tokenizer's special tokens (it appends <|endoftext|>), the last position's
// final hidden state, L2-normalized. One JSON line per text, in input order;
// a text that cannot be embedded gets {"error": ...} in its place.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "engine/engine.h"
#include "engine_flags.h"
#include "load_flags.h"
#include "runtime/embedding.h"
#include "runtime/model_bundle.h"
#include "standard_input.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

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

struct Job {
  std::vector<int32_t> ids;
  std::string error;  // set when the text was refused
  int64_t handle = -1;
};

void run_embed(const EmbedArgs& a) {
  a.engine.validate();
  if (a.dimensions < 0) usage_fail("--dimensions must be positive, got ", a.dimensions);
  std::vector<std::string> texts = a.texts;
  if (texts.empty()) {
    require_readable_stdin();
    for (std::string line; std::getline(std::cin, line);) texts.push_back(std::move(line));
    require_stdin_read_without_error();
  }
  const LoadOptions load_options = a.load.options();
  const ModelBundle bundle = load_model_bundle(a.model, load_options);
  const Tokenizer& tokenizer = bundle.require_tokenizer();
  const int64_t hidden = bundle.model->config().hidden_size;
  if (a.dimensions > hidden) usage_fail("--dimensions ", a.dimensions, " is more than the model's ", hidden);
  std::vector<Job> jobs(texts.size());
  int64_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      jobs[i].ids = embedding_input_ids(tokenizer, a.instruct ? embedding_query(*a.instruct, texts[i]) : texts[i]);
      longest = std::max(longest, static_cast<int64_t>(jobs[i].ids.size()));
    } catch (const Error& e) {
      jobs[i].error = "text " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  // A context of the longest text: the default pool is then a few of them,
  // whose blocks are recycled, not one of the model's full contexts per
  // running text, each new text writing pages never touched before (on
  // some hosts first touch costs more than the prefill: docs/performance.md).
  ThreadPool pool(load_options.threads);
  engine::Engine engine(*bundle.model, pool, a.engine.engine_options(*bundle.model, longest));
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].error.empty()) continue;
    try {
      jobs[i].handle = engine.add_embedding(jobs[i].ids);
    } catch (const Error& e) {
      jobs[i].error = "text " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  Timer timer;
  engine.run_until_idle();
  const double seconds = timer.seconds();

  int64_t tokens = 0, refused = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ordered_json out = {{"index", i}};
    if (jobs[i].handle < 0) {
      out["error"] = jobs[i].error;
      ++refused;
    } else {
      const GenerationResult& r = engine.result(jobs[i].handle);
      if (r.reason == StopReason::Error) fail(r.error);  // corrupt weights: every text would be wrong
      out["prompt_tokens"] = r.prompt_tokens;
      out["embedding"] = embedding_vector(engine.output(jobs[i].handle), a.dimensions, !a.no_normalize);
      tokens += r.prompt_tokens;
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fprintf(stderr, "[%zu texts (%lld refused), %lld tokens in %.2f s: %.1f tok/s]\n", jobs.size(),
               static_cast<long long>(refused), static_cast<long long>(tokens), seconds,
               seconds > 0 ? tokens / seconds : 0.0);
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
