// Cost of constrained decoding's token masks on Qwen3's vocabulary: one trie
// walk (TokenTrie::allowed) from JSON grammar states, the cheap ones (outside
// strings: the walk stops at the first or second byte of most tokens) and the
// costly one (inside a string nearly every token is allowed, so nearly the
// whole trie is walked), patterns, formats and bounded numbers, GBNF and
// regex grammars over plain text, and the mask of a cached state applied to
// logits.
#include <benchmark/benchmark.h>

#include <memory>

#include "runtime/grammar_constraint.h"
#include "text/grammar/gbnf.h"
#include "text/grammar/json_grammar.h"
#include "text/grammar/regex.h"
#include "text/tokenizer.h"

namespace {

struct Vocabulary {
  qinfer::Tokenizer tokenizer = qinfer::Tokenizer::from_file(QINFER_TEST_DATA "/tokenizer.json");
  std::shared_ptr<const qinfer::grammar::TokenTrie> trie = qinfer::token_trie(tokenizer);
};

const Vocabulary& vocabulary() {
  static const Vocabulary v;
  return v;
}

void BM_Mask(benchmark::State& state, const char* text, const char* schema = nullptr) {
  qinfer::grammar::Matcher m(std::make_shared<const qinfer::grammar::Grammar>(
      schema ? qinfer::grammar::json_schema_grammar(nlohmann::ordered_json::parse(schema))
             : qinfer::grammar::json_object_grammar()));
  if (!m.advance(text)) state.SkipWithError("the grammar refuses the text");
  std::vector<uint64_t> mask;
  const Vocabulary& v = vocabulary();  // loaded outside the timing
  for (auto _ : state) {
    v.trie->allowed(m, mask);
    benchmark::DoNotOptimize(mask.data());
  }
}
BENCHMARK_CAPTURE(BM_Mask, object_start, "")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, after_colon, "{\"name\": ")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_number, "{\"n\": 12")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_string, "{\"name\": \"Ann")->Unit(benchmark::kMillisecond);
// A bounded string: every character moves to another state (the count).
BENCHMARK_CAPTURE(BM_Mask, in_string_max_1000, "\"Ann", R"({"type": "string", "maxLength": 1000})")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_any_of_two_bounded_strings, "\"Ann",
                  R"({"anyOf": [{"type": "string", "maxLength": 100}, {"type": "string", "maxLength": 200}]})")
    ->Unit(benchmark::kMillisecond);
// Patterns, formats and bounds: an unanchored pattern's sides are any string
// (the walk of a string); an anchored one's classes cut most tokens at once.
BENCHMARK_CAPTURE(BM_Mask, in_unanchored_pattern, "\"Ann", R"({"type": "string", "pattern": "x[0-9]+"})")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_anchored_pattern, "\"AB-1", R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_date_time, "\"2024-02-", R"({"type": "string", "format": "date-time"})")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_uri, "\"https://example.com/a", R"({"type": "string", "format": "uri"})")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, in_bounded_number, "1", R"({"type": "number", "minimum": -5, "maximum": 100})")
    ->Unit(benchmark::kMillisecond);

// vLLM's structured outputs over plain text: a GBNF grammar mid-line of
// llama.cpp's list.gbnf (nearly every token allowed, as inside a JSON
// string), a regex's whole match, a choice of words.
void BM_TextMask(benchmark::State& state, const char* text, qinfer::grammar::Grammar (*build)(std::string_view),
                 const char* spec) {
  qinfer::grammar::Matcher m(std::make_shared<const qinfer::grammar::Grammar>(build(spec)));
  if (!m.advance(text)) state.SkipWithError("the grammar refuses the text");
  std::vector<uint64_t> mask;
  const Vocabulary& v = vocabulary();
  for (auto _ : state) {
    v.trie->allowed(m, mask);
    benchmark::DoNotOptimize(mask.data());
  }
}
BENCHMARK_CAPTURE(BM_TextMask, gbnf_list_item, "- Milk\n- Eg", qinfer::grammar::gbnf_grammar,
                  "root ::= item+\nitem ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TextMask, regex_email, "alan", qinfer::grammar::regex_grammar, "\\w+@\\w+\\.com\\n")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TextMask, gbnf_choice_start, "", qinfer::grammar::gbnf_grammar,
                  "root ::= \"positive\" | \"negative\" | \"neutral\"")
    ->Unit(benchmark::kMillisecond);

// A state seen before: the cached mask applied to a vocabulary of logits.
void BM_CachedMaskApplied(benchmark::State& state) {
  auto spec = std::make_shared<qinfer::OutputGrammar>();
  spec->grammar = std::make_shared<const qinfer::grammar::Grammar>(qinfer::grammar::json_object_grammar());
  spec->tokenizer = &vocabulary().tokenizer;
  spec->vocabulary = vocabulary().trie;
  qinfer::GrammarConstraint c(spec, {151645});
  for (int32_t id : vocabulary().tokenizer.encode("{\"name\": \"Ann")) c.accept(id);
  std::vector<float> logits(151936, 0.5f);
  c.mask(logits);  // computes and caches it
  for (auto _ : state) {
    c.mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(BM_CachedMaskApplied)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
