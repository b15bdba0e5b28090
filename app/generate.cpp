// qinfer generate: one prompt in, generated text out (streamed), with timing.
// The request runs on the batching engine, alone: its tokens are those of any
// other frontend given the same request.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "commands.h"
#include "engine/engine.h"
#include "generation_flags.h"
#include "model_files.h"
#include "runtime/grammar_constraint.h"
#include "runtime/text_stream.h"
#include "standard_input.h"
#include "text/grammar/gbnf.h"
#include "text/grammar/json_grammar.h"
#include "text/grammar/regex.h"
#include "text_file_flag.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

struct GenerateArgs {
  GenerationFlags flags{128};
  std::optional<std::string> prompt, prompt_file, prompt_ids;
  bool ignore_eos = false;
  bool json = false;
  int logprobs = -1;
  std::optional<std::string> logits_out;
  std::optional<std::string> json_schema, grammar;  // inline text, or @FILE
  std::optional<std::string> regex;
  bool json_object = false;
};

// --json-schema / --json-object / --grammar / --regex as a grammar, read
// before the model loads so that one it cannot follow is a command-line
// error (exit 2). Returns it and the flag that gave it (null: none).
std::pair<std::shared_ptr<const grammar::Grammar>, std::string> output_format(const GenerateArgs& a) {
  // A flag's text, or with @FILE the file's.
  auto text_of = [](const char* flag, const std::string& value) {
    if (value.empty() || value[0] != '@') return value;
    if (value.size() == 1) usage_fail(flag, " @ names no file: give @FILE, or the text itself");
    return read_named_file(flag, value.substr(1));
  };
  auto compiled = [](const char* flag, const std::function<grammar::Grammar()>& build) {
    try {
      return std::pair{std::make_shared<const grammar::Grammar>(build()), std::string(flag)};
    } catch (const Error& e) {
      usage_fail(flag, ": ", e.what());
    }
  };
  if (a.json_object) return compiled("--json-object", grammar::json_object_grammar);
  if (a.grammar) return compiled("--grammar", [&] { return grammar::gbnf_grammar(text_of("--grammar", *a.grammar)); });
  if (a.regex) return compiled("--regex", [&] { return grammar::regex_grammar(*a.regex); });
  if (!a.json_schema) return {};
  const auto schema = nlohmann::ordered_json::parse(text_of("--json-schema", *a.json_schema), nullptr, false);
  if (schema.is_discarded()) usage_fail("--json-schema: not valid JSON (give the schema, or @FILE to read it)");
  return compiled("--json-schema", [&] { return grammar::json_schema_grammar(schema); });
}

std::vector<int32_t> parse_ids(const std::string& s) {
  if (s.empty()) usage_fail("--prompt-ids is empty: give comma-separated token ids, e.g. 785,6722,315");
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string item = s.substr(i, j - i);
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      usage_fail("--prompt-ids: '", item, "' is not a token id (expected comma-separated non-negative integers)");
    }
    i = j + 1;
  }
  return ids;
}

// The prompt text of -p or --prompt-file (a path, or - for stdin).
std::string prompt_text(const GenerateArgs& a) {
  if (a.prompt) {
    if (a.prompt->empty()) usage_fail("the prompt is empty (-p \"\"): give the text to continue");
    utf8::require_valid(*a.prompt, "the prompt (-p)");
    return *a.prompt;
  }
  return read_text_flag("--prompt-file", *a.prompt_file, "the prompt");
}

// The --logits-out file, opened before generating so a bad path fails at once.
class LogitsFile {
 public:
  LogitsFile(const std::string& path, const std::vector<std::string>& model_dirs) : path_(path) {
    refuse_model_file("--logits-out", path, model_dirs);
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) fail(path, ": cannot create the logits file (--logits-out): ", std::strerror(errno));
  }
  void write(std::span<const float> logits) {
    out_.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size_bytes()));
    out_.close();
    if (!out_) fail(path_, ": writing the logits failed (--logits-out): ", std::strerror(errno));
  }

 private:
  std::string path_;
  std::ofstream out_;
};

// OpenAI's shape: per token its id, text and logprob, and the top candidates alike.
nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprobs>& tokens, const ModelBundle& bundle) {
  auto entry = [&](int32_t id, float logprob) {
    nlohmann::ordered_json e = {{"id", id}};
    if (bundle.tokenizer) e["token"] = bundle.tokenizer->decode(std::span(&id, 1));
    e["logprob"] = logprob;
    return e;
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TokenLogprobs& t : tokens) {
    nlohmann::ordered_json e = entry(t.id, t.logprob);
    e["top_logprobs"] = nlohmann::ordered_json::array();
    for (const auto& [id, lp] : t.top) e["top_logprobs"].push_back(entry(id, lp));
    out.push_back(std::move(e));
  }
  return out;
}

void run_generate(GenerateArgs& a) {
  const int given = a.prompt.has_value() + a.prompt_file.has_value() + a.prompt_ids.has_value();
  if (given != 1) usage_fail("pass exactly one of -p/--prompt, --prompt-file, --prompt-ids");
  auto [format, format_flag] = output_format(a);
  int threads = 0;
  const ModelBundle bundle = a.flags.load(threads);
  const int64_t context = a.flags.context(bundle);
  auto too_long = [&](const std::string& tokens) {
    fail("the prompt (", tokens, " tokens) does not fit the context of ", context,
         " tokens: nothing can be generated; shorten the prompt", a.flags.ctx > 0 ? " or raise --ctx" : "");
  };
  std::vector<int32_t> prompt;
  if (a.prompt_ids) {
    prompt = parse_ids(*a.prompt_ids);
  } else if (auto ids = bundle.require_tokenizer().encode_at_most(prompt_text(a), context)) {
    prompt = std::move(*ids);
  } else {
    too_long("more than " + std::to_string(context));  // a huge prompt is not encoded whole to say so
  }
  if (prompt.empty()) fail("the prompt encodes to no tokens");
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n >= context) too_long(std::to_string(n));
  if (a.flags.max_tokens > context - n)
    fail("the prompt (", n, " tokens) plus ", a.flags.max_tokens_flag->count() > 0 ? "-n " : "the default -n ",
         a.flags.max_tokens, " exceeds the context length of ", context, " tokens; use -n ", context - n,
         " or less (or -n -1: until eos or the context is full)");
  if (!a.flags.stops.empty() && !bundle.tokenizer) fail("--stop needs the tokenizer (tokenizer.json) to see text");
  std::optional<LogitsFile> logits_file;
  if (a.logits_out) {
    if (a.logits_out->empty()) usage_fail("--logits-out is empty: give the path of the file to write");
    logits_file.emplace(*a.logits_out, model_dirs(bundle.dir, a.flags.load_flags.options(), a.flags.draft.model));
  }

  GenerationOptions opts;
  opts.max_new_tokens = a.flags.max_tokens == -1 ? context : a.flags.max_tokens;
  opts.sampling = a.flags.sampling.apply(bundle.default_sampling());
  opts.eos_ids = bundle.eos_ids();
  opts.ignore_eos = a.ignore_eos;
  opts.keep_prompt_logits = logits_file.has_value();
  opts.logprobs = a.logprobs;
  if (format)
    opts.grammar =
        output_grammar(format, bundle.require_tokenizer(), bundle.token_trie(), ReasoningBlock::None, format_flag);

  // A write that fails (a closed pipe, a full disk) ends the generation: nobody reads the rest.
  int write_error = 0;
  auto print = [&](std::string_view piece) {
    if (std::fwrite(piece.data(), 1, piece.size(), stdout) != piece.size() || std::fflush(stdout) != 0)
      write_error = errno;
    return write_error == 0;
  };
  std::optional<TextStream> text;
  if (bundle.tokenizer)
    text.emplace(*bundle.tokenizer, a.flags.stops, [&](std::string_view piece) { return a.json || print(piece); });
  ThreadPool pool(threads);
  engine::Engine engine(*bundle.model, pool, a.flags.engine_options(bundle));
  const int64_t handle = engine.add(prompt, opts, [&](int32_t id, const TokenLogprobs*) {
    if (text) return text->push(id);
    return a.json || print(std::to_string(id) + " ");
  });
  engine.run_until_idle();
  if (text) text->finish();
  const GenerationResult& r = engine.result(handle);
  if (r.reason == StopReason::Error) fail(r.error);
  const char* finish = finish_reason(r.reason, text && text->stopped_by_string());
  if (logits_file) logits_file->write(engine.prompt_logits(handle));  // the prompt's: whole, whatever the text
  if (write_error != 0) fail("writing to standard output failed: ", std::strerror(write_error));

  if (a.json) {
    nlohmann::ordered_json j = {{"prompt_ids", prompt},
                                {"ids", r.ids},
                                {"finish_reason", finish},
                                {"prompt_tokens", r.prompt_tokens},
                                {"generated_tokens", r.ids.size()},
                                {"seed", opts.sampling.seed},
                                {"load_s", bundle.load_s},
                                {"prefill_s", r.prefill_s},
                                {"decode_s", r.decode_s},
                                {"prefill_tok_s", r.prefill_tok_s()},
                                {"decode_tok_s", r.decode_tok_s()},
                                {"threads", pool.size()}};
    if (a.flags.draft.on()) {
      j["draft_tokens"] = engine.draft_stats().drafted;
      j["draft_tokens_accepted"] = engine.draft_stats().accepted;
    }
    if (text) j["text"] = text->text();
    if (a.logprobs >= 0) j["logprobs"] = logprobs_json(r.logprobs, bundle);
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    const std::string drafts = a.flags.draft.summary(engine.draft_stats());
    std::fprintf(stderr, "[%zu tokens, %s%s; prefill %.1f tok/s, decode %.1f tok/s, load %.2f s%s]\n", r.ids.size(),
                 finish, r.reason == StopReason::ContextFull ? " (the context is full)" : "", r.prefill_tok_s(),
                 r.decode_tok_s(), bundle.load_s, drafts.c_str());
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt, streaming text as it comes");
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text (encoded with the model's tokenizer, special tokens allowed)");
  cmd->add_option("--prompt-file", a->prompt_file, "Read the prompt text from this file; - reads standard input");
  cmd->add_option("--prompt-ids", a->prompt_ids, "Prompt as comma-separated token ids, e.g. 785,6722,315");
  a->flags.add_options(cmd, "Maximum number of tokens to generate; -1 = until eos or the context is full");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at end-of-sequence tokens");
  CLI::Option* json =
      cmd->add_flag("--json", a->json, "Print one JSON object: prompt_ids, ids, text, finish_reason, seed, timing");
  cmd->add_option("--logprobs", a->logprobs,
                  "With --json: each generated token's logprob (log_softmax of the model's logits) and the N most "
                  "probable tokens' (N at most 20, as OpenAI's API)")
      ->check(CLI::Range(0, 20))
      ->needs(json);
  cmd->add_option("--logits-out", a->logits_out, "Write the last prompt position's logits (f32 little-endian) here");
  CLI::Option* schema = cmd->add_option("--json-schema", a->json_schema,
                                        "Constrain the output to a document of this JSON Schema (the JSON, or @FILE), "
                                        "as the server's response_format json_schema");
  CLI::Option* object =
      cmd->add_flag("--json-object", a->json_object, "Constrain the output to a JSON object (JSON mode)")
          ->excludes(schema);
  CLI::Option* gbnf = cmd->add_option("--grammar", a->grammar,
                                      "Constrain the output to a match of this GBNF grammar's root rule (llama.cpp's "
                                      "notation; the text, or @FILE), as the server's structured_outputs grammar")
                          ->excludes(schema)
                          ->excludes(object);
  cmd->add_option("--regex", a->regex,
                  "Constrain the output to a whole match of this regular expression, as the server's "
                  "structured_outputs regex")
      ->excludes(schema)
      ->excludes(object)
      ->excludes(gbnf);
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace qinfer::cli
