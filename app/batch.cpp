// qinfer batch: offline batch generation through the batching engine, as
// vLLM's LLM.generate over a list of prompts. One JSON request per input
// line, one JSON result per output line in input order; a bad line gets
// {"error": ...} in its place and the others still run.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "chat_template_flags.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine_flags.h"
#include "load_flags.h"
#include "lora_modules_flag.h"
#include "runtime/model_bundle.h"
#include "runtime/text_stream.h"
#include "server/openai_request.h"
#include "server/reply_grammar.h"
#include "standard_input.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

namespace {

using nlohmann::ordered_json;

struct BatchArgs {
  std::string model;
  LoraModulesFlag lora_modules;
  LoadFlags load;
  EngineFlags engine;
  DraftFlags draft;
  ChatTemplateFlags chat_template;
};

struct Job {
  int64_t line = 0;
  ordered_json error;  // set when the line was refused
  std::vector<int32_t> prompt;
  GenerationOptions options;
  std::vector<std::string> stops;
  StopOptions text_options;
  std::unique_ptr<TextStream> text;
  int64_t handle = -1;
};

constexpr int64_t kDefaultMaxTokens = 128;  // a line without max_tokens

// One input line into a job: the prompt (text, ids or chat messages) and the
// generation fields, read by the server's rules (server/openai_request.h) on
// top of the model's defaults. Unknown fields are refused: a misspelt one
// would otherwise be a silent default.
Job parse_job(const std::string& line, const ModelBundle& bundle, const std::string& model_name, int64_t context) {
  // A prompt that cannot fit is refused before it is encoded whole (a huge
  // line would take minutes); one that is merely too long, by the engine.
  auto too_long = [&] {
    fail("the prompt has more than ", context, " tokens but the context length is ", context,
         " tokens: nothing can be generated");
  };
  Job job;
  const ordered_json j = server::parse_json_body(line, "the line");
  for (const auto& item : j.items())
    if (item.key() != "prompt" && item.key() != "prompt_ids" && item.key() != "response_format" &&
        item.key() != "truncate_prompt_tokens" && item.key() != "model" && !server::is_chat_prompt_field(item.key()) &&
        !server::is_structured_output_field(item.key()) && !server::is_generation_field(item.key()))
      fail("unknown field \"", item.key(), "\"");
  const int32_t adapter = server::requested_adapter(j, {bundle, model_name, context});  // Error: no such adapter
  // A prompt to truncate is encoded whole first: its end is what is kept.
  const bool truncated = server::given(j, "truncate_prompt_tokens");
  const size_t limit = truncated ? SIZE_MAX : static_cast<size_t>(context);
  const int given = j.contains("prompt") + j.contains("prompt_ids") + j.contains("messages");
  if (given != 1) fail("give exactly one of \"prompt\", \"prompt_ids\", \"messages\"");
  if (j.contains("prompt_ids")) {
    if (!j["prompt_ids"].is_array()) fail("\"prompt_ids\" must be an array of token ids");
    const int64_t vocab = bundle.model->config().vocab_size;
    for (const auto& id : j["prompt_ids"]) {
      if (!id.is_number_integer() && !server::integral_float(id)) fail("\"prompt_ids\" must be an array of token ids");
      if (!server::is_token_id(id, static_cast<uint64_t>(vocab)))
        fail("token id ", id.dump(), " is outside the vocabulary [0, ", vocab, ")");
      job.prompt.push_back(id.get<int32_t>());
    }
  } else if (j.contains("prompt")) {
    if (!j["prompt"].is_string()) fail("\"prompt\" must be a string");
    auto ids = bundle.require_tokenizer().encode_at_most(j["prompt"].get_ref<const std::string&>(), limit);
    if (!ids) too_long();
    job.prompt = std::move(*ids);
  }
  server::GenerationFields fields = server::parse_generation_fields(j, bundle, kDefaultMaxTokens);
  job.options = std::move(fields.options);
  job.options.adapter = adapter;
  if (j.contains("messages")) {  // its text holds the reply's <think> block, if it opens one
    server::ChatPrompt chat = server::render_chat_prompt(j, bundle, limit);
    if (chat.over_limit) too_long();
    job.prompt = std::move(chat.ids);
    job.options.grammar = std::move(chat.grammar);
    job.options.thinking = chat.thinking;
  } else {
    for (const auto& item : j.items())
      if (server::is_chat_prompt_field(item.key())) fail("\"", item.key(), "\" goes with \"messages\"");
    job.options.grammar = server::parse_reply_grammar(j, bundle, ReasoningBlock::None);
  }
  std::vector<std::vector<int32_t>> prompts{std::move(job.prompt)};
  server::truncate_prompts(j, prompts, context, std::max<int64_t>(1, context - job.options.max_new_tokens));
  job.prompt = std::move(prompts[0]);
  job.stops = std::move(fields.stop);
  job.text_options = std::move(fields.text);
  return job;
}

void run_batch(BatchArgs& a) {
  a.engine.validate();
  a.draft.validate();
  a.chat_template.read();
  LoadOptions load_options = a.load.options();
  load_options.lora_modules = a.lora_modules.adapters(a.model);
  ModelBundle bundle = load_model_bundle(a.model, load_options);
  a.chat_template.apply(bundle);
  a.draft.load_model(bundle, load_options);
  engine::EngineOptions options = a.engine.engine_options(*bundle.model, 0, bundle.draft_model.get());
  a.draft.apply(options, bundle);
  const int64_t context = engine::sequence_context(*bundle.model, options);
  if (context < bundle.model->config().max_position_embeddings)
    std::fprintf(
        stderr,
        "qinfer batch: note: the KV pool holds %lld positions: a request ends (\"length\") when it fills them\n",
        static_cast<long long>(context));

  std::vector<Job> jobs;
  int64_t line_no = 0, longest = 0;
  require_readable_stdin();
  for (std::string line; std::getline(std::cin, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Job job;
    try {
      job = parse_job(line, bundle, a.model, context);
      if (!bundle.tokenizer && !job.stops.empty()) fail("\"stop\" needs the tokenizer (tokenizer.json) to see text");
      longest = std::max(longest, static_cast<int64_t>(job.prompt.size()) + job.options.max_new_tokens);
    } catch (const Error& e) {
      job = Job{};
      job.error = std::string("line ") + std::to_string(line_no) + ": " + e.what();
    }
    job.line = line_no;
    jobs.push_back(std::move(job));
  }
  require_stdin_read_without_error();

  // Each request's context is what the longest one can reach, so the default
  // pool is --parallel of those, whose blocks are recycled, not --parallel of
  // the model's full contexts, each new request writing pages never touched
  // before (on some hosts first touch costs more than the prefill:
  // docs/performance.md). No request ends sooner than it would with more.
  if (longest > 0) options.context = std::min(longest, context);
  ThreadPool pool(load_options.threads);
  engine::Engine engine(*bundle.model, pool, options);
  for (Job& job : jobs) {
    if (!job.error.is_null()) continue;
    try {
      if (bundle.tokenizer)
        job.text = std::make_unique<TextStream>(*bundle.tokenizer, job.stops, OnText{}, job.text_options);
      TextStream* text = job.text.get();
      job.handle = engine.add(job.prompt, job.options,
                              [text](int32_t id, const TokenLogprobs*) { return text ? text->push(id) : true; });
    } catch (const Error& e) {
      job.error = std::string("line ") + std::to_string(job.line) + ": " + e.what();
    }
  }

  const bool progress = ::isatty(STDERR_FILENO);
  // Each result is written once it and those before it are done (input order), so that what finished is out
  // whatever ends the run (Ctrl-C, a failure).
  int64_t prompt_tokens = 0, generated = 0, refused = 0, failed = 0;
  auto write_result = [&](Job& job) {
    ordered_json out;
    if (job.handle < 0) {
      out = {{"error", job.error}};
      ++refused;
    } else if (const GenerationResult& r = engine.result(job.handle); r.reason == StopReason::Error) {
      // Its grammar or masks (its fault), or corrupt weights (NaN logits): in its place, the others written too (a
      // hunt finding: the run stopped at the first, though a mixture's corrupt expert fails only the requests
      // routed to it), and the exit status says so.
      out = {{"error", "line " + std::to_string(job.line) + ": " + r.error}};
      ++(r.refused ? refused : failed);
    } else {
      if (job.text) job.text->finish(/*ended_by_stop_id=*/r.reason == StopReason::Eos);
      out = {{"ids", r.ids}};
      if (job.text) out["text"] = job.text->text();
      out["finish_reason"] = finish_reason(r.reason, job.text && job.text->stopped_by_string());
      out["prompt_tokens"] = r.prompt_tokens;
      out["cached_tokens"] = r.reused_tokens;
      out["seed"] = job.options.sampling.seed;  // drawn afresh for a line without one: this reproduces it
      prompt_tokens += r.prompt_tokens;
      generated += static_cast<int64_t>(r.ids.size());
    }
    if (progress) std::fprintf(stderr, "\r\033[K");  // the progress line goes before a result on a terminal
    const std::string line = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() || std::fflush(stdout) != 0)
      fail("writing to standard output failed: ", std::strerror(errno));  // nobody reads the rest: stop
    // What the line said is out: its request, text and prompt are not needed any more.
    if (job.handle >= 0) engine.erase(job.handle);
    job.text.reset();
    job.prompt = {};
  };
  size_t written = 0;
  auto write_finished = [&] {
    for (; written < jobs.size() && (jobs[written].handle < 0 || engine.finished(jobs[written].handle)); ++written)
      write_result(jobs[written]);
  };

  Timer timer;
  int64_t steps = 0;
  write_finished();
  while (engine.step()) {
    if (progress && ++steps % 16 == 0)
      std::fprintf(stderr, "\r%zu running, %zu waiting", engine.scheduler().running(), engine.scheduler().waiting());
    write_finished();
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  const double seconds = timer.seconds();
  write_finished();
  if (written < jobs.size()) fail("the engine stopped with ", jobs.size() - written, " requests unfinished");
  const std::string drafts = a.draft.summary(engine.draft_stats());
  std::fprintf(stderr,
               "[%zu requests (%lld refused), %lld prompt + %lld generated tokens in %.2f s: %.1f tok/s; "
               "peak %lld of %d KV blocks of %d positions; prefix cache %lld of %lld tokens; %lld preemptions%s]\n",
               jobs.size(), static_cast<long long>(refused), static_cast<long long>(prompt_tokens),
               static_cast<long long>(generated), seconds, seconds > 0 ? (prompt_tokens + generated) / seconds : 0.0,
               static_cast<long long>(engine.blocks().peak_used_blocks()), engine.blocks().n_blocks(),
               engine.blocks().block_size(), static_cast<long long>(engine.blocks().prefix_hits()),
               static_cast<long long>(engine.blocks().prefix_queries()),
               static_cast<long long>(engine.scheduler().preemptions()), drafts.c_str());
  if (failed > 0) fail(failed, " of the requests failed running (their lines say why)");
}

}  // namespace

void add_batch_command(CLI::App& app) {
  auto a = std::make_shared<BatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Generate for many requests at once through the batching engine: JSON lines in on stdin ({\"prompt\": ...} | "
      "{\"prompt_ids\": [...]} | {\"messages\": [...]}, with optional max_tokens (default 128), temperature, top_k, "
      "top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty, logit_bias, seed, stop, ignore_eos, "
      "response_format, structured_outputs, stop_token_ids, min_tokens, allowed_token_ids, bad_words, "
      "include_stop_str_in_output, skip_special_tokens, read as the server reads them), one JSON result per line out "
      "in input order "
      "({\"ids\", \"text\", "
      "\"finish_reason\", \"prompt_tokens\", \"cached_tokens\", \"seed\"} or {\"error\"})");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory, or a hub id (Qwen/Qwen3-0.6B) in the HF cache")
      ->required();
  a->engine.add_options(cmd);
  a->draft.add_options(cmd);
  a->chat_template.add_options(cmd, /*with_default_kwargs=*/true);
  a->lora_modules.add_option(cmd);  // a line's "model" names one (-m as given: none)
  a->load.add_options(cmd);
  cmd->callback([a] { run_batch(*a); });
}

}  // namespace qinfer::cli
