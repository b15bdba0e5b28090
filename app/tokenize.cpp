// qinfer tokenize: the model's tokenizer on its own. One text as an argument
// prints its ids and pieces; --jsonl and --decode filter JSON Lines on stdin
// (one output line per input line, in order) for scripts and diffing
// against Hugging Face tokenizers.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "io/model_dir.h"
#include "server/openai_request.h"
#include "standard_input.h"
#include "text/tokenizer.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

using nlohmann::json;

struct TokenizeArgs {
  std::string model;
  std::optional<std::string> text;  // "" is a text too: zero tokens, as HF tokenizes it
  bool jsonl = false;
  bool decode = false;
  bool plain_special = false;
  bool skip_special = false;
  bool no_post_processor = false;
};

// MODEL is a checkpoint directory / hub id, or a tokenizer.json itself.
Tokenizer load_tokenizer(const std::string& model) {
  if (std::filesystem::is_regular_file(model)) return Tokenizer::from_file(model);
  const std::string path = resolve_model_dir(model) + "/tokenizer.json";
  if (!file_exists(path)) fail(path, ": no tokenizer.json in the model directory");
  return Tokenizer::from_file(path);
}

// Ids a model of this checkpoint can emit: config.json's vocab_size (Qwen3's
// is padded past the tokenizer's; such ids decode to nothing, as in generate,
// batch and the server), or the tokenizer's own when -m is a tokenizer.json.
uint64_t emittable_ids(const std::string& model, const Tokenizer& tok) {
  uint64_t n = tok.vocab_size();
  if (std::filesystem::is_regular_file(model)) return n;
  const std::string config = resolve_model_dir(model) + "/config.json";
  if (!file_exists(config)) return n;
  const json j = json::parse(read_text_file(config), nullptr, false);
  if (j.is_object() && j.contains("vocab_size") && j["vocab_size"].is_number_unsigned())
    n = std::max(n, j["vocab_size"].get<uint64_t>());
  return n;
}

void print_line(const json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

// Calls on_record for each JSON object read from stdin, one per line (blank lines skipped).
template <class OnRecord>
void for_each_stdin_record(const char* field, OnRecord on_record) {
  size_t line_no = 0;
  require_readable_stdin();
  for (std::string line; std::getline(std::cin, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json record = server::parse_json_body(line, "stdin line " + std::to_string(line_no));
    if (!record.contains(field)) fail("stdin line ", line_no, ": expected an object with \"", field, "\"");
    try {
      on_record(record[field]);
    } catch (const json::exception& e) {
      fail("stdin line ", line_no, ": \"", field, "\": ", e.what());
    } catch (const Error& e) {
      fail("stdin line ", line_no, ": ", e.what());
    }
  }
  require_stdin_read_without_error();
}

void print_tokens(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::printf("%zu tokens: %s\n", ids.size(), json(ids).dump().c_str());
  for (int32_t id : ids) {
    const json text = std::string(tok.token_bytes(id));  // a byte token may be part of a character: shown as U+FFFD
    std::printf("%d\t%s\t%s\n", id, tok.id_to_piece(id).c_str(),
                text.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  }
}

void run_tokenize(const TokenizeArgs& a) {
  const int modes = int(a.text.has_value()) + int(a.jsonl) + int(a.decode);
  if (modes != 1) usage_fail("give exactly one of: TEXT, --jsonl, --decode");
  const Tokenizer tok = load_tokenizer(a.model);
  // As HF's encode(): the post-processor's special tokens around the text
  // (Qwen3-Embedding's appends <|endoftext|>; Qwen3's adds none) unless told not to.
  auto encode = [&](const std::string& text) {
    std::vector<int32_t> ids = tok.encode(text, !a.plain_special);
    return a.no_post_processor ? ids : tok.with_special_tokens(std::move(ids));
  };
  if (a.jsonl) {
    for_each_stdin_record("text", [&](const json& text) { print_line({{"ids", encode(text.get<std::string>())}}); });
  } else if (a.decode) {
    const uint64_t vocab = emittable_ids(a.model, tok);
    for_each_stdin_record("ids", [&](const json& ids) {
      if (!ids.is_array()) fail("\"ids\" must be a list of token ids");
      std::vector<int32_t> v;
      for (const json& id : ids) {
        if (!id.is_number_integer()) fail("\"ids\" must hold integer token ids, not ", id.dump());
        if (!server::is_token_id(id, vocab))
          fail("token id ", id.dump(), " is outside the model's vocabulary [0, ", vocab, ")");
        v.push_back(id.get<int32_t>());
      }
      print_line({{"text", tok.decode(v, a.skip_special)}});
    });
  } else {
    utf8::require_valid(*a.text, "TEXT");
    print_tokens(tok, encode(*a.text));
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Encode text with the model's tokenizer.json and print ids and pieces; or, with --jsonl / --decode, "
      "turn {\"text\": ...} lines on stdin into {\"ids\": [...]} lines and back");
  cmd->add_option("-m,--model", a->model,
                  "Checkpoint directory, hub id (Qwen/Qwen3-0.6B) in the HF cache, or a tokenizer.json")
      ->required();
  cmd->add_option("text", a->text, "Text to encode: prints the ids, then one line per token: id, piece, text");
  cmd->add_flag("--jsonl", a->jsonl, "Read {\"text\": ...} lines on stdin, write {\"ids\": [...]} lines");
  CLI::Option* decode =
      cmd->add_flag("--decode", a->decode, "Read {\"ids\": [...]} lines on stdin, write {\"text\": ...} lines");
  cmd->add_flag("--no-special", a->plain_special,
                "Encode the text of special tokens (<|im_start|>, ...) as plain text, for untrusted input")
      ->excludes(decode);
  cmd->add_flag("--no-add-special-tokens", a->no_post_processor,
                "Without the special tokens tokenizer.json's post-processor puts around a text (HF's "
                "add_special_tokens=False; Qwen3-Embedding's appends <|endoftext|>, Qwen3's adds none)")
      ->excludes(decode);
  cmd->add_flag("--skip-special", a->skip_special, "With --decode: leave out special tokens")->needs(decode);
  cmd->callback([a] { run_tokenize(*a); });
}

}  // namespace qinfer::cli
