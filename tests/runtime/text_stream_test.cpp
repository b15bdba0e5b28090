// Generation as text through TextStream: streaming pieces, stop strings split
// across tokens, cancellation, eos.
#include "runtime/text_stream.h"

#include <gtest/gtest.h>

#include "runtime/model_bundle.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace qinfer;

namespace {

struct TextGenerationResult {
  GenerationResult gen;
  std::string text;  // everything emitted
  bool stopped_by_string = false, cancelled = false;
  const char* finish_reason() const { return qinfer::finish_reason(gen.reason, stopped_by_string); }
};

// One Session's generation seen through a TextStream, as the frontends run it.
TextGenerationResult generate_text(Session& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                   const GenerationOptions& opts, const std::vector<std::string>& stop_strings,
                                   const OnText& on_text) {
  TextGenerationResult r;
  TextStream stream(tokenizer, stop_strings, on_text);
  r.gen = session.generate(prompt, opts, [&](int32_t id) { return stream.push(id); });
  stream.finish();
  r.text = stream.text();
  r.stopped_by_string = stream.stopped_by_string();
  r.cancelled = stream.cancelled();
  return r;
}

struct Fixture {
  ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool{2};
  std::vector<int32_t> prompt = bundle.tokenizer->encode("The capital of France is");
  GenerationOptions greedy(int64_t n) const {
    GenerationOptions o;
    o.max_new_tokens = n;
    o.sampling.temperature = 0;
    o.eos_ids = bundle.eos_ids();
    return o;
  }
};

}  // namespace

TEST(TextGeneration, StreamedPiecesConcatenateToTheDecodedIds) {
  Fixture f;
  Session s(*f.bundle.model, f.pool);
  std::string streamed;
  int pieces = 0;
  auto r = generate_text(s, *f.bundle.tokenizer, f.prompt, f.greedy(16), {}, [&](std::string_view p) {
    streamed += p;
    ++pieces;
    return true;
  });
  EXPECT_EQ(r.gen.ids.size(), 16u);
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text, f.bundle.tokenizer->decode(r.gen.ids, true));
  EXPECT_GT(pieces, 4);
  EXPECT_STREQ(r.finish_reason(), "length");
}

TEST(TextGeneration, StopStringAcrossTokenBoundaryIsDetectedAndNotEmitted) {
  Fixture f;
  Session s(*f.bundle.model, f.pool);
  const auto full = generate_text(s, *f.bundle.tokenizer, f.prompt, f.greedy(16), {}, nullptr);
  // A stop string made of the last 2 bytes of token 3's text and the first 2 of token 4's.
  const std::string upto3 = f.bundle.tokenizer->decode(std::span(full.gen.ids).first(3), true);
  const std::string upto4 = f.bundle.tokenizer->decode(std::span(full.gen.ids).first(4), true);
  ASSERT_GE(upto4.size(), upto3.size() + 2);
  ASSERT_EQ(full.text.compare(0, upto4.size(), upto4), 0);
  const std::string stop = full.text.substr(upto3.size() - 2, 4);
  const size_t at = full.text.find(stop);

  std::string streamed;
  const auto r =
      generate_text(s, *f.bundle.tokenizer, f.prompt, f.greedy(16), {"never-appears", stop}, [&](std::string_view p) {
        streamed += p;
        return true;
      });
  EXPECT_TRUE(r.stopped_by_string);
  EXPECT_STREQ(r.finish_reason(), "stop");
  EXPECT_EQ(r.text, full.text.substr(0, at));
  EXPECT_EQ(streamed, r.text);
  EXPECT_LT(r.gen.ids.size(), full.gen.ids.size());
}

TEST(TextGeneration, CancelFromCallbackStopsGeneration) {
  Fixture f;
  Session s(*f.bundle.model, f.pool);
  int calls = 0;
  const auto r =
      generate_text(s, *f.bundle.tokenizer, f.prompt, f.greedy(32), {}, [&](std::string_view) { return ++calls < 3; });
  EXPECT_TRUE(r.cancelled);
  EXPECT_STREQ(r.finish_reason(), "stop") << "OpenAI's vocabulary: the caller stopped it";
  EXPECT_LT(r.gen.ids.size(), 32u);
}

TEST(FinishReason, OneVocabularyStopOrLength) {
  EXPECT_STREQ(finish_reason(StopReason::Eos, false), "stop");
  EXPECT_STREQ(finish_reason(StopReason::Callback, false), "stop");
  EXPECT_STREQ(finish_reason(StopReason::MaxTokens, true), "stop");
  EXPECT_STREQ(finish_reason(StopReason::MaxTokens, false), "length");
  EXPECT_STREQ(finish_reason(StopReason::ContextFull, false), "length");
}

TEST(TextGeneration, EosStopsAndIsNotShown) {
  Fixture f;
  Session s(*f.bundle.model, f.pool);
  const auto full = generate_text(s, *f.bundle.tokenizer, f.prompt, f.greedy(8), {}, nullptr);
  GenerationOptions o = f.greedy(8);
  o.eos_ids = {full.gen.ids[2]};  // pretend the third token ends the sequence
  const auto r = generate_text(s, *f.bundle.tokenizer, f.prompt, o, {}, nullptr);
  EXPECT_EQ(r.gen.ids.size(), 3u);
  EXPECT_EQ(r.gen.reason, StopReason::Eos);
  EXPECT_STREQ(r.finish_reason(), "stop");
}

TEST(Session, SecondTurnReusesTheCachedPrefixAndMatchesAFreshSession) {
  Fixture f;
  Session chat(*f.bundle.model, f.pool);
  const auto first = chat.generate(f.prompt, f.greedy(6), nullptr);
  std::vector<int32_t> turn2 = f.prompt;
  turn2.insert(turn2.end(), first.ids.begin(), first.ids.end());
  for (int32_t id : f.bundle.tokenizer->encode(" And Spain?")) turn2.push_back(id);
  const auto second = chat.generate(turn2, f.greedy(6), nullptr);
  EXPECT_EQ(second.reused_tokens, static_cast<int64_t>(f.prompt.size() + first.ids.size() - 1));
  Session fresh(*f.bundle.model, f.pool);
  const auto want = fresh.generate(turn2, f.greedy(6), nullptr);
  EXPECT_EQ(second.ids, want.ids);
  ASSERT_EQ(chat.prompt_logits().size(), fresh.prompt_logits().size());
  for (size_t i = 0; i < want.ids.size(); ++i) EXPECT_EQ(second.ids[i], want.ids[i]);
  float max_diff = 0;
  for (size_t i = 0; i < chat.prompt_logits().size(); ++i)
    max_diff = std::max(max_diff, std::fabs(chat.prompt_logits()[i] - fresh.prompt_logits()[i]));
  EXPECT_LE(max_diff, 1e-4f);
}

// vLLM's min_tokens and include_stop_str_in_output: a stop string ending in
// the first min_tokens ids' text does not count (a hunt finding: the
// min_tokens-th id's did, where vLLM's detokenizer checks from the next one
// on, as eos may end the answer only there); the one that ends the text is
// kept at its end when asked.
TEST(TextGeneration, StopStringsCountAfterTheMinTokensthIdAndMayBeKept) {
  const ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  const std::vector<int32_t> ids = bundle.tokenizer->encode("one.\ntwo.\nthree.\nfour");
  size_t second_line = 0;  // ids through the one whose text holds the first "\n"
  for (std::string text; text.find('\n') == std::string::npos; ++second_line)
    text += bundle.tokenizer->decode(std::span<const int32_t>(&ids[second_line], 1));
  auto run = [&](StopOptions options) {
    TextStream stream(*bundle.tokenizer, {"\n"}, {}, options);
    for (int32_t id : ids)
      if (!stream.push(id)) break;
    stream.finish();
    EXPECT_EQ(stream.stop_string(), stream.stopped_by_string() ? "\n" : "");
    return stream.text();
  };
  const auto min = [](size_t n, bool keep) {
    StopOptions options;
    options.min_tokens = static_cast<int64_t>(n);
    options.include_stop_string = keep;
    return options;
  };
  EXPECT_EQ(run({}), "one.");
  EXPECT_EQ(run(min(second_line - 1, false)), "one.");  // the id after the min_tokens-th may stop
  EXPECT_EQ(run(min(second_line, false)), "one.\ntwo.");
  EXPECT_EQ(run(min(ids.size(), false)), "one.\ntwo.\nthree.\nfour");
  EXPECT_EQ(run(min(0, true)), "one.\n");
  EXPECT_EQ(run(min(second_line, true)), "one.\ntwo.\n");
}

// vLLM's: the text of a stop id that ended generation (eos or
// stop_token_ids) is left out unless include_stop_str_in_output, a stop id
// that did not end it shows as any id (held until the next id says so), and
// skip_special_tokens false shows special tokens.
TEST(TextGeneration, AStopIdThatEndedTheTextIsLeftOutAndSpecialTokensShowWhenAsked) {
  const ModelBundle bundle = load_model_bundle(test::data_path("models/tiny"));
  const Tokenizer& tok = *bundle.tokenizer;
  const int32_t im_start = *tok.token_to_id("<|im_start|>"), im_end = *tok.token_to_id("<|im_end|>");
  const std::vector<int32_t> ids = tok.encode("Hi there. Bye", /*allow_special=*/false);
  const int32_t dot = tok.encode(".", false).at(0);
  ASSERT_NE(std::find(ids.begin(), ids.end(), dot), ids.end());
  struct Run {
    std::string text;
    std::vector<std::string> pieces;
  };
  auto run = [&](std::vector<int32_t> pushed, StopOptions options, bool ended_by_stop_id) {
    Run r;
    TextStream stream(
        tok, {}, [&](std::string_view piece) { return r.pieces.emplace_back(piece), true; }, options);
    for (int32_t id : pushed) EXPECT_TRUE(stream.push(id));
    stream.finish(ended_by_stop_id);
    r.text = stream.text();
    return r;
  };
  std::vector<int32_t> with_special = {im_start};
  with_special.insert(with_special.end(), ids.begin(), ids.end());
  with_special.push_back(im_end);
  EXPECT_EQ(run(with_special, {}, false).text, "Hi there. Bye");
  StopOptions shown;
  shown.skip_special_tokens = false;
  EXPECT_EQ(run(with_special, shown, false).text, "<|im_start|>Hi there. Bye<|im_end|>");
  // <|im_end|> as the eos that ended it: left out, unless asked for.
  const StopOptions eos = {.skip_special_tokens = false, .stop_ids = {im_end}};
  EXPECT_EQ(run(with_special, eos, true).text, "<|im_start|>Hi there. Bye");
  StopOptions kept = eos;
  kept.include_stop_string = true;
  EXPECT_EQ(run(with_special, kept, true).text, "<|im_start|>Hi there. Bye<|im_end|>");
  // A normal stop id ("."): its text waits for the next id, then shows; when it ends the text, it is left out.
  const std::vector<int32_t> to_dot(ids.begin(), std::find(ids.begin(), ids.end(), dot) + 1);
  const StopOptions dot_stops = {.stop_ids = {dot}};
  EXPECT_EQ(run(ids, dot_stops, false).text, "Hi there. Bye");
  std::vector<std::string> pieces;
  TextStream held(
      tok, {}, [&](std::string_view piece) { return pieces.emplace_back(piece), true; }, dot_stops);
  for (int32_t id : to_dot) held.push(id);
  EXPECT_EQ(pieces.size(), to_dot.size() - 1);  // "." waits
  held.push(ids.at(to_dot.size()));
  ASSERT_EQ(pieces.size(), to_dot.size() + 1);
  EXPECT_EQ(pieces[to_dot.size() - 1], ".");
  EXPECT_EQ(run(to_dot, dot_stops, true).text, "Hi there");
  EXPECT_EQ(run(to_dot, dot_stops, false).text, "Hi there.");  // the length ran out on it
}
