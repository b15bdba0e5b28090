// OpenAI request bodies onto engine requests: defaults from the model,
// every field checked with an error naming it.
#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include "runtime/grammar_constraint.h"
#include "server/api_error.h"
#include "test_util.h"

using namespace qinfer;
using namespace qinfer::server;
using nlohmann::ordered_json;

namespace {

class OpenAiRequest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { bundle_ = new ModelBundle(load_model_bundle(test::data_path("models/tiny"))); }
  static void TearDownTestSuite() { delete bundle_; }
  ServedModel served(int64_t context = 64) const { return {*bundle_, "tiny", context}; }

  // The ApiError a body provokes (status 0 when it is accepted).
  ApiError error_of(const std::string& body, bool chat, int64_t context = 64) const {
    try {
      const ordered_json j = parse_json_body(body);
      if (chat)
        parse_chat_request(j, served(context));
      else
        parse_completion_request(j, served(context));
    } catch (const ApiError& e) {
      return e;
    }
    return ApiError(0, "accepted");
  }
  // Each (fields, param, message): those fields added to a chat and to a
  // completion body are a 400 naming param, its message holding message.
  void expect_400s_on_both_endpoints(const std::vector<std::tuple<std::string, std::string, std::string>>& bad) const {
    for (const bool chat : {true, false})
      for (const auto& [fields, param, message] : bad) {
        SCOPED_TRACE(fields);
        const ApiError e = error_of(
            (chat ? std::string(R"({"messages": [{"role": "user", "content": "x"}], )") : R"({"prompt": "x", )") +
                fields + "}",
            chat, 4096);
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.param, param);
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      }
  }
  static ModelBundle* bundle_;
};
ModelBundle* OpenAiRequest::bundle_ = nullptr;

}  // namespace

// A hunt finding: a conversation from clients on the deprecated function
// calling (an assistant's function_call, then a "function" message), or
// with an assistant's refusal part, was a 400; OpenAI's API takes both.
TEST_F(OpenAiRequest, LegacyFunctionCallsAndRefusalPartsAreTheirToolCallsAndText) {
  const auto render = [&](const char* messages) {
    const ordered_json body = ordered_json::parse(std::string(R"({"messages": )") + messages + "}");
    return bundle_->require_tokenizer().decode(parse_chat_request(body, served()).prompts[0]);
  };
  const std::string legacy = render(R"([{"role": "user", "content": "w"},
      {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{\"x\": 1}"}},
      {"role": "function", "name": "f", "content": "r"}])");
  const std::string modern = render(R"([{"role": "user", "content": "w"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c", "content": "r"}])");
  EXPECT_EQ(legacy, modern);
  EXPECT_NE(legacy.find("<tool_response>\nr\n</tool_response>"), std::string::npos) << legacy;
  EXPECT_NE(legacy.find(R"("name": "f")"), std::string::npos) << legacy;
  EXPECT_EQ(render(R"([{"role": "user", "content": "w"}, {"role": "assistant", "content": [{"type": "refusal",
      "refusal": "no"}]}, {"role": "user", "content": "x"}])"),
            render(R"([{"role": "user", "content": "w"}, {"role": "assistant", "content": "no"},
      {"role": "user", "content": "x"}])"));
  EXPECT_THROW(render(R"([{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}])"), ApiError);
  // A re-hunt: calls without a name or arguments rendered as empty ones or failed inside the template.
  for (const char* call :
       {R"({"arguments": "{}"})", R"({"name": "f"})", R"({"name": "", "arguments": "{}"})", R"("auto")"}) {
    const std::string messages = std::string(R"([{"role": "user", "content": "w"}, {"role": "assistant",
        "content": null, "function_call": )") +
                                 call + "}]";
    try {
      render(messages.c_str());
      ADD_FAILURE() << "accepted " << call;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param, "messages[1].function_call") << call << ": " << e.what();
    }
  }
  EXPECT_THROW(render(R"([{"role": "user", "content": "w", "function_call": {"name": "f", "arguments": "{}"}}])"),
               ApiError);
  EXPECT_THROW(render(R"([{"role": "user", "content": "w"}, {"role": "assistant", "content": null, "tool_calls":
      [{"type": "function", "function": {"name": "f"}}]}])"),
               ApiError);
}

TEST_F(OpenAiRequest, ChatRendersTheTemplateAndTakesTheSamplingFields) {
  const ordered_json body = ordered_json::parse(R"({"model": "tiny", "messages": [{"role": "developer", "content":
      "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
      "temperature": 0.5, "top_k": 7, "top_p": 0.9, "min_p": 0.1, "seed": 42, "max_completion_tokens": 9,
      "stop": ["\n\n", "END"], "n": 2, "stream": true, "stream_options": {"include_usage": true},
      "logit_bias": {"100": -100, "7": 2.5}, "presence_penalty": 0.5, "frequency_penalty": -0.5,
      "repetition_penalty": 1.1})");
  const CompletionRequest r = parse_chat_request(body, served());
  ASSERT_EQ(r.prompts.size(), 1u);
  const std::string rendered = bundle_->require_tokenizer().decode(r.prompts[0]);
  EXPECT_EQ(rendered,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi \nthere<|im_end|>\n"
            "<|im_start|>assistant\n");
  const SamplingParams& s = r.options.sampling;
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_EQ(s.top_k, 7);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_FLOAT_EQ(s.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>{100, -100.0f}));
  // A hunt finding: spellings of one id ("7", "07") each added their bias, past the +-100 bound.
  const ordered_json twice = ordered_json::parse(
      R"({"prompt": "x", "logit_bias": {"7": 100, "07": 100, "007": 50}, "max_tokens": 4, "max_completion_tokens": 4,
          "top_k": 200000})");
  const CompletionRequest t = parse_completion_request(twice, served());
  EXPECT_EQ(t.options.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{7, 50.0f}}));
  EXPECT_EQ(t.options.max_new_tokens, 4);
  EXPECT_EQ(r.options.max_new_tokens, 9);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream && r.include_usage && r.chat);
  EXPECT_EQ(r.options.eos_ids, bundle_->eos_ids());
}

// What serve --ignore-unknown-fields drops: the fields no parser reads, in body
// order; known ones, implemented or refused by name, stay.
TEST_F(OpenAiRequest, UnknownFieldsAreThoseNoParserReads) {
  const ordered_json chat = ordered_json::parse(R"({"typical_p": 0.9, "messages": [], "mirostat_mode": 2,
      "functions": [], "temperature": 1, "include_reasoning": true, "prompt": "x", "json_schema": {}})");
  EXPECT_EQ(unknown_fields(chat, true), (std::vector<std::string>{"typical_p", "mirostat_mode", "prompt"}));
  EXPECT_EQ(unknown_fields(chat, false),
            (std::vector<std::string>{"typical_p", "messages", "mirostat_mode", "functions", "include_reasoning"}));
  EXPECT_TRUE(unknown_fields(ordered_json::parse(R"({"prompt": "x", "n": 2, "prompt_cache_retention": "24h"})"), false)
                  .empty());
}

// vLLM's: stream_options.continuous_usage_stats (with include_usage only),
// include_reasoning, and beam search's fields at the values that leave it off.
TEST_F(OpenAiRequest, VllmUsageReasoningAndBeamSearchFieldsAreTaken) {
  const ordered_json body = ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}], "stream": true,
      "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "include_reasoning": false,
      "use_beam_search": false, "length_penalty": 1.0})");
  const CompletionRequest r = parse_chat_request(body, served());
  EXPECT_TRUE(r.include_usage && r.continuous_usage);
  EXPECT_FALSE(r.include_reasoning);
  EXPECT_FALSE(r.return_token_ids);
  EXPECT_TRUE(parse_completion_request(ordered_json::parse(R"({"prompt": "x", "return_token_ids": true})"), served())
                  .return_token_ids);
  const CompletionRequest plain =
      parse_chat_request(ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}], "stream": true,
          "stream_options": {"continuous_usage_stats": true}})"),
                         served());
  EXPECT_FALSE(plain.include_usage || plain.continuous_usage);  // as vLLM: usage in every chunk needs include_usage
  EXPECT_TRUE(plain.include_reasoning);
}

// OpenAI's predicted outputs: the text's ids for the engine's drafts (text
// parts joined as message parts are), a context's worth at most; chat only.
TEST_F(OpenAiRequest, PredictionIsTheIdsOfItsText) {
  const Tokenizer& tok = bundle_->require_tokenizer();
  auto prediction_of = [&](const std::string& prediction) {
    const CompletionRequest r = parse_chat_request(
        ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}], "prediction": )" + prediction + "}"),
        served());
    return r.options.prediction ? r.options.prediction->ids() : std::vector<int32_t>{-1};
  };
  EXPECT_EQ(prediction_of(R"({"type": "content", "content": "def f():\n    return 1"})"),
            tok.encode("def f():\n    return 1"));
  EXPECT_EQ(prediction_of(R"({"type": "content", "content": [{"type": "text", "text": "a b"},
      {"type": "text", "text": "c"}]})"),
            tok.encode("a b\nc"));
  std::string words;
  for (int i = 0; i < 3000; ++i) words += " w" + std::to_string(i);
  EXPECT_EQ(prediction_of(R"({"type": "content", "content": ")" + words + "\"}").size(), size_t{64})
      << "cut at the context";
  EXPECT_FALSE(parse_chat_request(ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), served())
                   .options.prediction);
  EXPECT_EQ(unknown_fields(ordered_json::parse(R"({"prompt": "x", "prediction": {}})"), false),
            std::vector<std::string>{"prediction"});
}

TEST_F(OpenAiRequest, DefaultChatTemplateKwargsApplyUnlessTheRequestSetsItsOwn) {
  const auto prompt = [&](const std::string& kwargs, const std::string& more = "") {
    return parse_chat_request(
               ordered_json::parse(R"({"messages": [{"role": "user", "content": "Hi"}])" + more +
                                   (kwargs.empty() ? "" : R"(, "chat_template_kwargs": )" + kwargs) + "}"),
               served(256))
        .prompts[0];
  };
  const auto thinking = prompt(""), not_thinking = prompt(R"({"enable_thinking": false})");
  ASSERT_NE(thinking, not_thinking);
  struct Restore {
    ModelBundle& b;
    ~Restore() { b.default_chat_template_kwargs = ordered_json::object(); }
  } restore{*bundle_};
  bundle_->default_chat_template_kwargs = {{"enable_thinking", false}, {"reasoning_effort", "high"}};
  EXPECT_EQ(prompt(""), not_thinking);
  EXPECT_EQ(prompt(R"({"enable_thinking": true})"), thinking);
  // The request's own reasoning_effort replaces the default's, where the same in its kwargs would be refused.
  EXPECT_EQ(prompt("", R"(, "reasoning_effort": "low")"), not_thinking);
  EXPECT_THROW(prompt(R"({"reasoning_effort": "low"})", R"(, "reasoning_effort": "low")"), ApiError);
}

// transformers passes enable_thinking=None as None (a template's default(...) keeps it); it was a 400 here.
TEST(ChatTemplateKwargs, EnableThinkingNullIsNone) {
  ChatTemplateInput in;
  in.messages = ordered_json::array();
  read_chat_template_kwargs(ordered_json::parse(R"({"enable_thinking": null})"), in);
  const ChatTemplate t("{{ enable_thinking is none }} {{ enable_thinking | default(true) }}");
  EXPECT_EQ(t.render(in), "True None");
  read_chat_template_kwargs(ordered_json::parse(R"({"enable_thinking": false})"), in);
  EXPECT_EQ(ChatTemplate("{{ enable_thinking }}").render(in), "False");
  EXPECT_THROW(read_chat_template_kwargs(ordered_json::parse(R"({"enable_thinking": 0})"), in), ApiError);
}

TEST_F(OpenAiRequest, EnableThinkingFalseClosesTheThinkBlockInThePrompt) {
  const ordered_json body = ordered_json::parse(
      R"({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": false}})");
  const CompletionRequest r = parse_chat_request(body, served());
  const std::string rendered = bundle_->require_tokenizer().decode(r.prompts[0]);
  EXPECT_NE(rendered.find("<think>\n\n</think>\n\n"), std::string::npos) << rendered;
  EXPECT_FALSE(r.starts_in_reasoning);
  // Found with a sampled model: a constrained reply could still open a
  // second <think> block, free until max_tokens. The template closed the
  // reasoning; the grammar holds from the first token, as vLLM's does once
  // the prompt ends the reasoning.
  ordered_json constrained = body;
  constrained["structured_outputs"] = {{"choice", {"yes", "no"}}};
  const CompletionRequest c = parse_chat_request(constrained, served());
  ASSERT_NE(c.options.grammar, nullptr);
  EXPECT_EQ(c.options.grammar->think_open, -1);
  EXPECT_FALSE(c.options.grammar->starts_in_reasoning);
}

// A hunt finding: a user asking about the "<think>" tag had the whole reply
// filed as reasoning. Only the generation prompt can open the block.
TEST_F(OpenAiRequest, OnlyTheGenerationPromptCanStartTheReplyInReasoning) {
  auto starts_in_reasoning = [](const ModelBundle& bundle, const std::string& content) {
    ordered_json body = {{"messages", {{{"role", "user"}, {"content", content}}}}};
    return parse_chat_request(body, {bundle, "m", 4096}).starts_in_reasoning;
  };
  EXPECT_FALSE(starts_in_reasoning(*bundle_, "What does the <think> tag do?"));
  // A template that opens the block itself, as thinking-only models' do.
  test::ScratchDir dir("openai-think");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::create_symlink(test::data_path(std::string("models/tiny/") + f), dir.file(f));
  std::ofstream(dir.file("tokenizer_config.json"))
      << ordered_json{{"chat_template",
                       "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                       "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"}};
  const ModelBundle thinking = load_model_bundle(dir.path());
  EXPECT_TRUE(starts_in_reasoning(thinking, "Hi"));
  EXPECT_TRUE(starts_in_reasoning(thinking, "What does </think> do?"));
}

// A hunt finding: reasoning_effort (agent frameworks send it) was a 400.
// As vLLM, it goes to the template, which Qwen3's ignores.
TEST_F(OpenAiRequest, ReasoningEffortGoesToTheTemplate) {
  const ordered_json plain = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  ordered_json low = plain;
  low["reasoning_effort"] = "low";
  const Tokenizer& tok = bundle_->require_tokenizer();
  EXPECT_EQ(tok.decode(parse_chat_request(low, served(4096)).prompts[0]),
            tok.decode(parse_chat_request(plain, served(4096)).prompts[0]));
  test::ScratchDir dir("openai-effort");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::create_symlink(test::data_path(std::string("models/tiny/") + f), dir.file(f));
  std::ofstream(dir.file("tokenizer_config.json"))
      << ordered_json{{"chat_template", "effort={{ reasoning_effort | default('unset') }}"}};
  const ModelBundle effort_template = load_model_bundle(dir.path());
  auto rendered = [&](const ordered_json& body) {
    return tok.decode(parse_chat_request(body, {effort_template, "m", 4096}).prompts[0]);
  };
  EXPECT_EQ(rendered(plain), "effort=unset");
  EXPECT_EQ(rendered(low), "effort=low");
  ordered_json by_kwargs = plain;
  by_kwargs["chat_template_kwargs"] = {{"reasoning_effort", "high"}};
  EXPECT_EQ(rendered(by_kwargs), "effort=high");
}

// An assistant "prefill": the reply goes on with the final message's text,
// in the prompt as the template writes that message, up to its text's end.
TEST_F(OpenAiRequest, ContinueFinalMessageEndsThePromptWithItsText) {
  const Tokenizer& tok = bundle_->require_tokenizer();
  auto chat = [&](const char* body) { return parse_chat_request(ordered_json::parse(body), served(4096)); };
  const CompletionRequest r = chat(R"({"messages": [{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "The answer is"}], "continue_final_message": true})");
  EXPECT_EQ(tok.decode(r.prompts[0]),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nThe answer is");
  EXPECT_FALSE(r.starts_in_reasoning);
  // Reasoning of its own, left open: the reply goes on reasoning.
  EXPECT_TRUE(chat(R"({"messages": [{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "<think>\nLet me"}], "continue_final_message": true})")
                  .starts_in_reasoning);
  // Without the generation prompt: the conversation as it stands.
  EXPECT_EQ(
      tok.decode(
          chat(R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})").prompts[0]),
      "<|im_start|>user\nHi<|im_end|>\n");
  struct Case {
    const char* body;
    const char* param;
    const char* message_part;
  };
  const Case cases[] = {
      {R"({"messages": [{"role": "assistant", "content": "A"}], "continue_final_message": true,
           "add_generation_prompt": true})",
       "add_generation_prompt", "not both"},
      {R"({"messages": [{"role": "user", "content": "A"}], "continue_final_message": true})", "continue_final_message",
       "messages[0] is not one"},
      {R"({"messages": [{"role": "user", "content": "A"}, {"role": "assistant", "content": ""}],
           "continue_final_message": true})",
       "continue_final_message", "messages[1] is not one"},
      {R"({"messages": [{"role": "assistant", "content": "A"}], "continue_final_message": 1})",
       "continue_final_message", "true or false"},
      {R"({"messages": [{"role": "assistant", "content": "{\"a\": "}], "continue_final_message": true,
           "response_format": {"type": "json_object"}})",
       "continue_final_message", "cannot be constrained"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.body, true, 4096);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.body << ": " << e.what();
  }
}

// A follow-up turn sends the assistant's reply back as the SDK returned it:
// "content": null (or none) beside its tool_calls, arguments as a JSON string.
TEST_F(OpenAiRequest, AnAssistantToolCallWithNullContentAndItsResultRender) {
  for (const char* content : {R"("content": null, )", ""}) {
    const ordered_json body = ordered_json::parse(std::string(R"({"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", )") + content + R"("tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}]})");
    const CompletionRequest r = parse_chat_request(body, served(512));
    const std::string rendered = bundle_->require_tokenizer().decode(r.prompts[0]);
    EXPECT_NE(rendered.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>"),
              std::string::npos)
        << rendered;
    EXPECT_NE(rendered.find("<tool_response>\n18 C\n</tool_response>"), std::string::npos) << rendered;
  }
  // A hunt finding: arguments "" (a tool without parameters, as some clients
  // send it) rendered `"arguments": }`; it is {}, as vLLM has it.
  const ordered_json empty = ordered_json::parse(R"({"messages": [{"role": "user", "content": "Time?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_time", "arguments": ""}}]}, {"role": "tool", "content": "noon"}]})");
  const std::string rendered = bundle_->require_tokenizer().decode(parse_chat_request(empty, served(512)).prompts[0]);
  EXPECT_NE(rendered.find(R"({"name": "get_time", "arguments": {}})"), std::string::npos) << rendered;
}

// Unset max_tokens: chat runs until the context is full, completions stop
// at 16 tokens (OpenAI's and vLLM's default).
TEST_F(OpenAiRequest, DefaultsFromTheModelAndUntilTheContextIsFullOr16Tokens) {
  const CompletionRequest r = parse_completion_request(ordered_json::parse(R"({"prompt": "Hello"})"), served(50));
  EXPECT_EQ(r.options.max_new_tokens, 16);
  const ordered_json chat = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}};
  EXPECT_EQ(parse_chat_request(chat, served(50)).options.max_new_tokens, 50);  // the context ends it
  EXPECT_EQ(r.options.sampling.temperature, bundle_->default_sampling().temperature);
  const CompletionRequest a = parse_completion_request(ordered_json::parse(R"({"prompt": "Hello"})"), served());
  const CompletionRequest b = parse_completion_request(ordered_json::parse(R"({"prompt": "Hello"})"), served());
  EXPECT_NE(a.options.sampling.seed, b.options.sampling.seed);  // unseeded requests differ
}

TEST_F(OpenAiRequest, CompletionPromptForms) {
  auto prompts = [&](const char* body) {
    return parse_completion_request(ordered_json::parse(body), served()).prompts;
  };
  EXPECT_EQ(prompts(R"({"prompt": [1, 2, 3]})"), (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  EXPECT_EQ(prompts(R"({"prompt": [[1, 2], [3]]})"), (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
  EXPECT_EQ(prompts(R"({"prompt": ["hello world", [5]]})"), (std::vector<std::vector<int32_t>>{{14990, 1879}, {5}}));
}

// vLLM's truncate_prompt_tokens: each prompt's last k tokens; -1 as many as
// leave max_tokens (one token when not given) room in the context.
TEST_F(OpenAiRequest, TruncatePromptTokensKeepsEachPromptsLastTokens) {
  auto prompts = [&](const std::string& body, int64_t context = 64) {
    return parse_completion_request(ordered_json::parse(body), served(context)).prompts;
  };
  using Prompts = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(prompts(R"({"prompt": [[1, 2, 3, 4, 5], [6, 7]], "truncate_prompt_tokens": 3})"),
            (Prompts{{3, 4, 5}, {6, 7}}));
  EXPECT_EQ(prompts(R"({"prompt": [1, 2, 3], "truncate_prompt_tokens": null})"), (Prompts{{1, 2, 3}}));
  const std::string ten = R"({"prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "truncate_prompt_tokens": -1)";
  // Unset, completions' max_tokens is 16 (a review finding: -1 left one token's room, and the answer was cut
  // there, or a min_tokens refused).
  EXPECT_EQ(prompts(ten + "}", 20), (Prompts{{7, 8, 9, 10}}));
  EXPECT_EQ(prompts(ten + R"(, "min_tokens": 16})", 20), (Prompts{{7, 8, 9, 10}}));
  EXPECT_EQ(prompts(ten + R"(, "max_tokens": 5})", 8), (Prompts{{8, 9, 10}}));
  EXPECT_EQ(prompts(ten + R"(, "max_completion_tokens": 2})", 8), (Prompts{{5, 6, 7, 8, 9, 10}}));
  // Text is cut after encoding ("hello world" is 14990, 1879); a chat prompt after rendering.
  EXPECT_EQ(prompts(R"({"prompt": "hello world", "truncate_prompt_tokens": 1})"), (Prompts{{1879}}));
  const auto chat = [&](const char* extra) {
    return parse_chat_request(
               ordered_json::parse(std::string(R"({"messages": [{"role": "user", "content": "hi"}])") + extra + "}"),
               served())
        .prompts[0];
  };
  const std::vector<int32_t> whole = chat("");
  ASSERT_GT(whole.size(), 4u);
  EXPECT_EQ(chat(R"(, "truncate_prompt_tokens": 4)"), std::vector<int32_t>(whole.end() - 4, whole.end()));
  const auto cut_chat = parse_chat_request(
      ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "truncate_prompt_tokens": -1})"),
      served(static_cast<int64_t>(whole.size()) - 2));
  EXPECT_EQ(cut_chat.prompts[0],
            std::vector<int32_t>(whole.end() - static_cast<std::ptrdiff_t>(whole.size()) + 3, whole.end()))
      << "chat's unset max_tokens: one token's room";
  // Wrong values name the field; k over the context too (as vLLM refuses it).
  for (const char* value : {"0", "-2", "65", "2.5", "\"3\"", "true"}) {
    const ApiError e = error_of(std::string(R"({"prompt": [1, 2], "truncate_prompt_tokens": )") + value + "}", false);
    EXPECT_EQ(e.status, 400) << value;
    EXPECT_EQ(e.param, "truncate_prompt_tokens") << value;
  }
  EXPECT_NE(std::string(error_of(R"({"prompt": [1], "truncate_prompt_tokens": 65})", false).what()).find("-1 and 64"),
            std::string::npos);
  // A prompt cut to k still has to leave the room max_tokens asks for.
  EXPECT_EQ(error_of(R"({"prompt": [1, 2, 3], "truncate_prompt_tokens": 2, "max_tokens": 63})", false).param,
            "max_tokens");
  // A review finding: a min_tokens beside a max_tokens the context cannot hold named min_tokens, not the
  // context's length as without it.
  const ApiError both = error_of(R"({"prompt": [1, 2, 3], "max_tokens": 63, "min_tokens": 62})", false);
  EXPECT_EQ(both.param, "max_tokens");
  EXPECT_NE(std::string(both.what()).find("maximum context length"), std::string::npos) << both.what();
}

// The Responses API's truncation "auto": the fewest earliest messages after
// the system ones go until the conversation leaves its reply room.
TEST_F(OpenAiRequest, AConversationTooLongLosesItsEarliestMessagesAfterTheSystemOnes) {
  const std::string words = " one two three four five six seven eight nine ten";
  auto conversation = [&](size_t from) {  // the system message, then turns from..5
    ordered_json messages = ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}});
    for (size_t i = from; i < 6; ++i)
      messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::to_string(i) + words}});
    return ordered_json{{"messages", messages}, {"max_tokens", 8}};
  };
  auto tokens = [&](size_t from) { return parse_chat_request(conversation(from), served(1000)).prompts[0].size(); };
  const int64_t context = static_cast<int64_t>(tokens(3)) + 8;  // turns 3..5 and the reply fit exactly
  ASSERT_GT(static_cast<int64_t>(tokens(2)) + 8, context);
  const CompletionRequest fitted = parse_chat_request_fitting(conversation(0), served(context));
  EXPECT_EQ(fitted.prompts[0], parse_chat_request(conversation(3), served(context)).prompts[0]);
  EXPECT_THROW(parse_chat_request(conversation(0), served(context)), ContextLengthError);
  // A conversation that fits is left whole.
  EXPECT_EQ(parse_chat_request_fitting(conversation(0), served(1000)).prompts[0],
            parse_chat_request(conversation(0), served(1000)).prompts[0]);
  // The last message stays: when it alone does not fit, the error is the usual one.
  try {
    parse_chat_request_fitting(conversation(0), served(static_cast<int64_t>(tokens(5))));
    FAIL() << "the last message alone does not fit";
  } catch (const ContextLengthError& e) {
    EXPECT_EQ(e.param, "messages");  // it fills the context whole
  }
  // A hunt finding: a call dropped, its tool result stayed, an answer to no call.
  const std::string big = R"({\"x\": \"z)" + std::string(200, 'z') + R"(\"})";
  const ordered_json with_call = ordered_json::parse(R"({"max_tokens": 8, "messages": [
      {"role": "user", "content": "q"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": ")" + big +
                                                     R"("}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "ok"},
      {"role": "user", "content": "next"}]})");
  ordered_json last_only = with_call;
  last_only["messages"] = ordered_json::array({with_call["messages"][3]});
  const int64_t fits_last = static_cast<int64_t>(parse_chat_request(last_only, served(1000)).prompts[0].size()) + 20;
  EXPECT_EQ(parse_chat_request_fitting(with_call, served(fits_last)).prompts[0],
            parse_chat_request(last_only, served(fits_last)).prompts[0]);
}

TEST_F(OpenAiRequest, EachBadFieldIsA400NamingIt) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
    const char* message_part;
  };
  const Case cases[] = {
      {R"({"messages": "hi"})", true, "messages", "list of messages"},
      {R"({"messages": []})", true, "messages", "must not be empty"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", true, "messages[0].role", "'wizard'"},
      {R"({"messages": [{"role": "user"}]})", true, "messages[0].content", "missing"},
      {R"({"messages": [{"role": "user", "content": null}]})", true, "messages[0].content", "only beside tool_calls"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": null}]})", true,
       "messages[1].content", "missing"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, "messages[0].content",
       "text only"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", true, "tools", "list"},
      {R"({"prompt": "x", "temperature": "hot"})", false, "temperature", "number"},
      {R"({"prompt": "x", "temperature": 3})", false, "temperature", "between 0 and 2"},
      {R"({"prompt": "x", "top_p": 0})", false, "top_p", "greater than 0"},
      {R"({"prompt": "x", "top_k": 1.5})", false, "top_k", "integer"},
      {R"({"prompt": "x", "max_tokens": 0})", false, "max_tokens", "between 1"},
      {R"({"prompt": "x", "max_tokens": 18446744073709551615})", false, "max_tokens", "between 1 and 2147483647"},
      {R"({"prompt": "x", "n": 17})", false, "n", "between 1 and 16"},
      {R"({"prompt": "x", "stop": 5})", false, "stop", "string or a list"},
      {R"({"prompt": "x", "stop": [""]})", false, "stop", "empty"},
      {R"({"prompt": "x", "seed": "s"})", false, "seed", "integer"},
      {R"({"prompt": "x", "stream": "yes"})", false, "stream", "true or false"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", false, "stream_options", "only allowed"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"include_usage_stats": true}})", false, "stream_options",
       "Unrecognized request argument supplied: stream_options.include_usage_stats"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": 1}})", false,
       "continuous_usage_stats", "true or false"},
      {R"({"prompt": "x", "use_beam_search": true})", false, "use_beam_search", "not supported"},
      {R"({"prompt": "x", "return_token_ids": 1})", false, "return_token_ids", "true or false"},
      {R"({"prompt": "x", "length_penalty": 0.5})", false, "length_penalty", "not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "include_reasoning": "no"})", true, "include_reasoning",
       "true or false"},
      {R"({"prompt": "x", "include_reasoning": false})", false, "include_reasoning", "Unrecognized"},
      {R"({"prompt": "x", "logit_bias": {"abc": 1}})", false, "logit_bias", "not a token id"},
      {R"({"prompt": "x", "logit_bias": {"151936": 1}})", false, "logit_bias", "not a token id"},
      {R"({"prompt": "x", "logit_bias": {"5": 101}})", false, "logit_bias", "between -100 and 100"},
      // Hunt findings: the name not used was never checked, whatever it held.
      {R"({"prompt": "x", "max_tokens": "abc", "max_completion_tokens": 3})", false, "max_tokens", "integer"},
      {R"({"prompt": "x", "max_tokens": 1, "max_completion_tokens": 5})", false, "max_tokens", "differ"},
      {R"({"prompt": "x", "logprobs": true})", false, "logprobs", "integer"},
      {R"({"prompt": "x", "logprobs": 21})", false, "logprobs", "between 0 and 20"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, "top_logprobs", "needs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", true, "logprobs", "true or false"},
      {R"({"prompt": 5})", false, "prompt", "must be a string"},
      {R"({"prompt": [1, -1]})", false, "prompt", "[0, 151936); prompt[1] is -1"},
      {R"({"prompt": [[1], [2, 3, 151936]]})", false, "prompt", "[0, 151936); prompt[1][2] is 151936"},
      {R"({"prompt": ""})", false, "prompt", "empty"},
      {R"({})", false, "prompt", "missing"},
      {R"({"prompt": "x", "model": 3})", false, "model", "string"},
      // OpenAI refuses fields it does not know: a misspelt max_tokens ran to the end of the context.
      {R"({"prompt": "x", "max_token": 5})", false, "max_token", "Unrecognized request argument supplied: max_token"},
      {R"({"prompt": "x", "messages": []})", false, "messages", "Unrecognized request argument"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": 1})", true, "echo", "true or false"},
      {R"({"prompt": "x", "echo": 1})", false, "echo", "true or false"},
      {R"({"prompt": "x", "max_tokens": 0})", false, "max_tokens", "between 1 and"},
      {R"({"prompt": "x", "max_tokens": 0, "echo": false})", false, "max_tokens", "between 1 and"},
      {R"({"prompt": "x", "suffix": "end"})", false, "suffix", "not supported"},
      {R"({"prompt": "x", "best_of": 3})", false, "best_of", "not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})", true,
       "response_format", "must be \"text\", \"json_object\" or \"json_schema\", got \"xml\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": "json"})", true, "response_format",
       "must be an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object", "x": 1}})", true,
       "response_format", "response_format.x"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})", true,
       "response_format", "json_schema' is missing"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"schema": {}}}})",
       true, "response_format", "name' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "n", "schema": {"type": "number", "multipleOf": 2}}}})",
       true, "response_format", "/multipleOf is a keyword qinfer does not follow"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "n", "schema": {"$ref": "#/$defs/none"}}}})",
       true, "response_format", "#/$defs/none"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", true, "tool_choice",
       "needs 'tools'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"})", true, "tool_choice",
       "got \"always\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       true, "tool_choice", "'g', which no tool defines"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f",
          "parameters": {"type": "object", "properties": {"d": {"type": "string", "format": "phone"}}}}}],
          "tool_choice": "required"})",
       true, "tool_choice", "tools[0].function.parameters: json_schema: /properties/d/format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": "required", "response_format": {"type": "json_object"}})",
       true, "tool_choice", "cannot both constrain"},
      {R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": "no"})", true, "parallel_tool_calls",
       "true or false"},
      {R"({"prompt": "x", "max_tokens": 10.5})", false, "max_tokens", "integer"},
      {R"({"prompt": "x", "max_tokens": 1e300})", false, "max_tokens", "between 1 and 2147483647"},
      {R"({"prompt": "x", "n": 0.0})", false, "n", "between 1 and 16"},
      {R"({"prompt": "x", "seed": 0.5})", false, "seed", "integer"},
      {R"({"prompt": "x", "seed": 1e20})", false, "seed", "integer"},
      // A hunt finding: below -2^63 the parser makes a float of -2^63, which was taken (2^64 was refused).
      {R"({"prompt": "x", "seed": -9223372036854775809})", false, "seed", "64-bit integer"},
      {R"({"prompt": "x", "seed": 18446744073709551616})", false, "seed", "64-bit integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"messages": []}})", true,
       "chat_template_kwargs", "may not set 'messages'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"tools": "x"}})", true,
       "chat_template_kwargs", "may not set 'tools'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"add_generation_prompt": false}})",
       true, "chat_template_kwargs", "may not set 'add_generation_prompt'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "functions": []})", true, "functions", "not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"})", true, "reasoning_effort",
       "one of none, minimal, low, medium, high, xhigh"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": 3})", true, "reasoning_effort",
       "one of none"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "low",
           "chat_template_kwargs": {"reasoning_effort": "high"}})",
       true, "chat_template_kwargs", "may not set 'reasoning_effort'"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.body, c.chat);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.body << ": " << e.what();
  }
}

// A fuzz-like finding: 200,000 nested lists in a message overflowed the
// stack when the message was copied; such bodies are refused while parsing.
TEST_F(OpenAiRequest, DeeplyNestedBodiesAreRefusedWhileParsing) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  for (const std::string& where : {std::string(R"("messages": [{"role": "user", "content": "x", "extra": @}])"),
                                   std::string(R"("messages": [{"role": "user", "content": "x"}], "tools": [{"type":
                                       "function", "function": {"name": "f", "parameters": @}}])")}) {
    std::string body = "{" + where + "}";
    const size_t at = body.find('@');
    const ApiError deep = error_of(std::string(body).replace(at, 1, nested(200000)), true);
    EXPECT_EQ(deep.status, 400);
    EXPECT_NE(std::string(deep.what()).find("nested deeper than 128 levels"), std::string::npos) << deep.what();
    const ApiError shallow = error_of(std::string(body).replace(at, 1, nested(100)), true, 4096);
    EXPECT_EQ(shallow.status, 0) << shallow.what();
  }
}

// A hunt finding: parsing was quadratic. nlohmann's parser callback (the
// depth check) rescanned the parent after each object (an array of 200,000
// {} in a 600 KB body took 9 s; minutes under the sanitizers), and
// ordered_json's linear key search makes an object of n members cost n^2.
// Both are now bounded by one pass over the text before parsing.
TEST_F(OpenAiRequest, BodiesThatWouldParseSlowlyAreRefusedOrParseInLinearTime) {
  std::string objects = R"({"prompt": "x", "user": [)";
  for (int i = 0; i < 200000; ++i) objects += i ? ",{}" : "{}";
  EXPECT_EQ(error_of(objects + "]}", false).status, 0);
  auto members = [](int n, int objects) {
    std::string body = R"({"prompt": "x", "user": [)";
    for (int o = 0; o < objects; ++o) {
      body += o ? ",{" : "{";
      for (int i = 0; i < n; ++i) body += (i ? ",\"" : "\"") + std::to_string(i) + "\": 1";
      body += "}";
    }
    return body + "]}";
  };
  EXPECT_EQ(error_of(members(10000, 1), false).status, 0);
  const ApiError big = error_of(members(10001, 1), false);
  EXPECT_EQ(big.status, 400);
  EXPECT_NE(std::string(big.what()).find("objects too large to parse (10001 members in one"), std::string::npos)
      << big.what();
  EXPECT_EQ(error_of(members(2000, 30), false).status, 400);
  // An object that never closes costs the parser as much before it fails: counted as its keys come.
  std::string open = members(10001, 1);
  open.resize(open.size() - 3);  // without "}]}"
  const ApiError unclosed = error_of(open, false);
  EXPECT_NE(std::string(unclosed.what()).find("objects too large to parse (10001 members in one"), std::string::npos)
      << unclosed.what();
  // A re-hunt finding: a tool call's arguments, JSON inside a string, were parsed without the check.
  std::string arguments = "{";
  for (int i = 0; i <= 10000; ++i) arguments += (i ? ",\"" : "\"") + std::to_string(i) + "\": 1";
  const ordered_json call = {
      {"messages",
       {{{"role", "user"}, {"content", "x"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments + "}"}}}}}}}}}};
  const ApiError in_arguments = error_of(call.dump(), true);
  EXPECT_EQ(in_arguments.status, 400);
  EXPECT_NE(std::string(in_arguments.what()).find("'messages[1].tool_calls' arguments holds objects too large"),
            std::string::npos)
      << in_arguments.what();
  // An audit finding: so was a JSON Schema given as a string (1 MB took 6 s of a thread).
  const std::string schema = arguments + "}";
  for (const ordered_json& body : {ordered_json{{"prompt", "x"}, {"guided_json", schema}},
                                   ordered_json{{"prompt", "x"}, {"structured_outputs", {{"json", schema}}}}}) {
    const ApiError in_schema = error_of(body.dump(), false);
    EXPECT_EQ(in_schema.status, 400) << body.dump().substr(0, 40);
    EXPECT_NE(std::string(in_schema.what()).find("holds objects too large to parse (10001 members"), std::string::npos)
        << in_schema.what();
  }
  // Braces, colons and escaped quotes inside strings are text, not structure.
  EXPECT_EQ(error_of(R"({"prompt": "{[:\"}]{", "user": "\\"})", false).status, 0);
  EXPECT_EQ(error_of("{\"prompt\": \"x\", \"user\": \"" + std::string(200, '[') + "\"}", false).status, 0);
}

// echo asks for the prompt's log-probabilities with those of the completion
// (as many alternatives), and allows max_tokens 0: the prompt alone.
TEST_F(OpenAiRequest, EchoAsksForThePromptsLogprobs) {
  const CompletionRequest r = parse_completion_request(
      ordered_json::parse(R"({"prompt": "x y", "echo": true, "logprobs": 3, "max_tokens": 0})"), served(4096));
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.options.logprobs, 3);
  EXPECT_EQ(r.options.prompt_logprobs, 3);
  EXPECT_EQ(r.options.max_new_tokens, 0);
  const CompletionRequest text_only =
      parse_completion_request(ordered_json::parse(R"({"prompt": "x", "echo": true})"), served(4096));
  EXPECT_TRUE(text_only.echo);
  EXPECT_EQ(text_only.options.prompt_logprobs, -1) << "no logprobs asked for: none computed";
  EXPECT_FALSE(parse_completion_request(ordered_json::parse(R"({"prompt": "x", "logprobs": 1})"), served(4096)).echo);
  EXPECT_EQ(parse_completion_request(ordered_json::parse(R"({"prompt": "x", "logprobs": 1})"), served(4096))
                .options.prompt_logprobs,
            -1);
}

// What a client sends to label or route a request, or asks for with the
// value that changes nothing, is taken; tool_choice "none" keeps the tools
// out of the prompt.
TEST_F(OpenAiRequest, FieldsThatChangeNothingAreAccepted) {
  for (const char* body : {R"({"prompt": "x", "user": "u", "metadata": {"a": "b"}, "store": false,
                              "service_tier": "auto", "echo": false, "suffix": "", "best_of": 2, "n": 2})",
                           R"({"prompt": "x", "best_of": 1, "n": null})",  // null is not given, as everywhere
                           R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text"},
                              "tool_choice": "auto", "parallel_tool_calls": true, "modalities": ["text"]})"})
    EXPECT_EQ(error_of(body, std::string(body).find("messages") != std::string::npos).status, 0) << body;
  const ordered_json tools = ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]})");
  auto rendered = [&](const ordered_json& body) {
    return bundle_->require_tokenizer().decode(parse_chat_request(body, served(4096)).prompts[0]);
  };
  EXPECT_NE(rendered(tools).find("get_weather"), std::string::npos);
  ordered_json none = tools;
  none["tool_choice"] = "none";
  EXPECT_EQ(rendered(none).find("get_weather"), std::string::npos);
}

// Hunt findings: a float with an integral value (10.0, as clients that
// compute a length send it) was refused where pydantic (vLLM) takes it; an
// assistant message's "tool_calls": null (a reply sent back as the SDK dumps
// it) was a 400; parallel_tool_calls false was refused; the reply could
// call tools the request never offered.
TEST_F(OpenAiRequest, IntegralFloatsNullToolCallsAndWhichToolCallsTheReplyMayMake) {
  const CompletionRequest r = parse_completion_request(
      ordered_json::parse(R"({"prompt": "x", "max_tokens": 10.0, "n": 2.0, "seed": -1.0})"), served());
  EXPECT_EQ(r.options.max_new_tokens, 10);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.options.sampling.seed, ~uint64_t{0});
  const CompletionRequest lowest =
      parse_completion_request(ordered_json::parse(R"({"prompt": "x", "seed": -9223372036854775808})"), served());
  EXPECT_EQ(lowest.options.sampling.seed, uint64_t{1} << 63) << "-2^63, the lowest 64-bit integer, is a seed";
  const CompletionRequest replied = parse_chat_request(ordered_json::parse(R"({"messages": [
      {"role": "user", "content": "a"}, {"role": "assistant", "content": "ok", "tool_calls": null},
      {"role": "user", "content": "b"}]})"),
                                                       served(512));
  EXPECT_NE(bundle_->require_tokenizer().decode(replied.prompts[0]).find("<|im_start|>assistant\nok<|im_end|>"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": null,
      "tool_calls": null}]})",
                     true)
                .param,
            "messages[1].content");
  auto tool_calls = [&](const std::string& extra) {
    return parse_chat_request(ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}])" +
                                                  (extra.empty() ? "" : ", " + extra) + "}"),
                              served(4096))
        .tool_calls;
  };
  EXPECT_EQ(tool_calls(""), ToolCalls::None);
  EXPECT_EQ(tool_calls(R"("tools": [])"), ToolCalls::None);
  EXPECT_EQ(tool_calls(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none")"),
            ToolCalls::None);
  EXPECT_EQ(tool_calls(R"("tools": [{"type": "function", "function": {"name": "f"}}])"), ToolCalls::Any);
  EXPECT_EQ(tool_calls(R"("tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": false)"),
            ToolCalls::One);
}

TEST_F(OpenAiRequest, MalformedBodiesUnknownModelsAndOverlongPrompts) {
  EXPECT_EQ(error_of("{\"prompt\": ", false).status, 400);
  // A hunt finding: nlohmann stops at a NUL byte, so what followed one was never read.
  const ApiError nul = error_of(std::string("{\"prompt\": \"x\"}\0{\"junk", 21), false);
  EXPECT_EQ(nul.status, 400);
  EXPECT_NE(std::string(nul.what()).find("a NUL byte at offset 15"), std::string::npos) << nul.what();
  EXPECT_EQ(error_of("[1, 2]", false).status, 400);
  // A fuzz finding: a number too large for a double is nlohmann's out_of_range, not a parse_error.
  const ApiError overflow = error_of(R"({"prompt": "x", "temperature": 1E999999})", false);
  EXPECT_EQ(overflow.status, 400);
  EXPECT_NE(std::string(overflow.what()).find("number overflow"), std::string::npos) << overflow.what();
  const ApiError model = error_of(R"({"prompt": "x", "model": "gpt-4"})", false);
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(model.param, "model");
  const ApiError longer = error_of(R"({"prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]})", false, 10);
  EXPECT_EQ(longer.status, 400);
  EXPECT_NE(std::string(longer.what()).find("maximum context length is 10 tokens"), std::string::npos);
  EXPECT_NE(std::string(longer.what()).find("resulted in 10 tokens"), std::string::npos);
  const ApiError sum = error_of(R"({"prompt": [1, 2, 3], "max_tokens": 8})", false, 10);
  EXPECT_EQ(sum.param, "max_tokens");
  EXPECT_NE(std::string(sum.what()).find("requested 11 tokens (3 in the prompt, 8 in the completion)"),
            std::string::npos)
      << sum.what();
  EXPECT_EQ(error_of(R"({"prompt": [1, 2, 3], "max_tokens": 7})", false, 10).status, 0);
}

// A hunt finding: errors echoed the offending input in full (an unknown 3 MB
// key gave a 6 MB 400: message and param) and ended at a NUL byte in it (the
// message is a C string). Echoed input is now an excerpt, NUL spelled out.
TEST_F(OpenAiRequest, ErrorsEchoAnExcerptOfTheInput) {
  const std::string huge(3'000'000, 'k');
  auto json = [](const ordered_json& j) { return j.dump(); };
  std::vector<ApiError> errors = {
      error_of(json({{"prompt", "x"}, {huge, 1}}), false),
      error_of(json({{"prompt", "x"}, {"model", huge}}), false),
      error_of(json({{"prompt", "x"}, {"suffix", huge}}), false),
      error_of(json({{"prompt", "x"}, {"logit_bias", {{huge, 1}}}}), false),
      error_of(json({{"prompt", "x"}, {"stream", true}, {"stream_options", {{huge, 1}}}}), false),
      error_of(json({{"messages", {{{"role", huge}, {"content", "x"}}}}}), true),
      error_of("{\"prompt\": \"" + huge, false),
      error_of(json({{"prompt", {1, huge}}}), false),  // a re-hunt finding: a prompt element was echoed whole
  };
  for (const ApiError& e : errors) {
    EXPECT_GE(e.status, 400);
    const std::string body = e.to_json().dump();
    EXPECT_LT(body.size(), 1000u) << body.substr(0, 300);
    EXPECT_NE(body.find("... (300"), std::string::npos) << body.substr(0, 300);
  }
  const ApiError nul = error_of(json({{"prompt", "x"}, {"model", std::string("ab\0cd", 5)}}), false);
  EXPECT_NE(std::string(nul.what()).find("The model 'ab\\u0000cd' does not exist"), std::string::npos) << nul.what();
}

// response_format and a forced tool_choice become the request's grammar; "text",
// "auto" and "none" leave the reply free. /v1/completions takes response_format too.
TEST_F(OpenAiRequest, ReplyFormatsBecomeTheRequestsGrammar) {
  const ServedModel m = served(4096);
  auto chat = [&](const char* extra) {
    return parse_chat_request(
        ordered_json::parse(std::string(R"({"messages": [{"role": "user", "content": "x"}])") + extra + "}"), m);
  };
  EXPECT_EQ(chat("").options.grammar, nullptr);
  EXPECT_EQ(chat(R"(, "response_format": {"type": "text"})").options.grammar, nullptr);
  EXPECT_NE(chat(R"(, "response_format": {"type": "json_object"})").options.grammar, nullptr);
  EXPECT_NE(chat(R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}}})")
                .options.grammar,
            nullptr);
  const char* tools = R"(, "tools": [{"type": "function", "function": {"name": "f"}}])";
  EXPECT_EQ(chat((std::string(tools) + R"(, "tool_choice": "auto")").c_str()).options.grammar, nullptr);
  EXPECT_EQ(chat((std::string(tools) + R"(, "tool_choice": "none")").c_str()).options.grammar, nullptr);
  const CompletionRequest forced = chat((std::string(tools) + R"(, "tool_choice": "required")").c_str());
  ASSERT_NE(forced.options.grammar, nullptr);
  grammar::Matcher call(forced.options.grammar->grammar);
  EXPECT_TRUE(call.advance("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_TRUE(call.state().accepting);
  // A hunt finding: parameters {} let a call's arguments be any value (a string, seen); an object, as vLLM reads
  // it, and as a tool without parameters has.
  for (const char* parameters : {"{}", "null"}) {
    const CompletionRequest empty =
        chat((R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": )" + std::string(parameters) +
              R"(}}], "tool_choice": "required")")
                 .c_str());
    grammar::Matcher string_arguments(empty.options.grammar->grammar);
    EXPECT_FALSE(string_arguments.advance("<tool_call>\n{\"name\": \"f\", \"arguments\": \"")) << parameters;
    grammar::Matcher object_arguments(empty.options.grammar->grammar);
    EXPECT_TRUE(object_arguments.advance("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"))
        << parameters;
  }
  const CompletionRequest completion = parse_completion_request(
      ordered_json::parse(R"({"prompt": "x", "response_format": {"type": "json_object"}})"), m);
  ASSERT_NE(completion.options.grammar, nullptr);
  EXPECT_FALSE(completion.options.grammar->starts_in_reasoning);
  // A re-hunt: a completion's text is all answer (nothing splits a <think>
  // block off it), so none may open; a chat reply's may.
  EXPECT_EQ(completion.options.grammar->think_open, -1);
  EXPECT_GE(chat(R"(, "response_format": {"type": "json_object"})").options.grammar->think_open, 0);
}

// Hunt findings: a tool's parameters resolved their $refs against the wrapper
// the server built around them; a grammar too ambiguous to follow stalled the
// engine for every request (seconds per token) before failing with a 500.
TEST_F(OpenAiRequest, ToolParametersKeepTheirRefsAndAmbiguousGrammarsAre400s) {
  const ServedModel m = served(4096);
  const CompletionRequest r = parse_chat_request(ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "tree", "parameters": {"type": "object",
        "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}},
                       "unit": {"$ref": "#/$defs/unit"}},
        "required": ["v"], "$defs": {"unit": {"enum": ["m", "s"]}}}}}],
      "tool_choice": {"type": "function", "function": {"name": "tree"}}})"),
                                                 m);
  ASSERT_NE(r.options.grammar, nullptr);
  grammar::Matcher call(r.options.grammar->grammar);
  EXPECT_TRUE(
      call.advance("<tool_call>\n{\"name\": \"tree\", \"arguments\": {\"v\": 1, \"kids\": [{\"v\": 2}], \"unit\": "
                   "\"m\"}}\n</tool_call>"));
  EXPECT_TRUE(call.state().accepting);
  grammar::Matcher wrapper(r.options.grammar->grammar);  // "#" is the parameters, not the call around them
  EXPECT_FALSE(wrapper.advance("<tool_call>\n{\"name\": \"tree\", \"arguments\": {\"v\": 1, \"kids\": [{\"name\""));

  ordered_json branches = ordered_json::array();
  for (int i = 0; i < 2000; ++i) branches.push_back({{"type", "string"}, {"maxLength", 10}});
  ordered_json body = ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}]})");
  body["response_format"] = {{"type", "json_schema"},
                             {"json_schema", {{"name", "n"}, {"schema", {{"anyOf", branches}}}}}};
  try {
    parse_chat_request(body, m);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "response_format");
    EXPECT_NE(std::string(e.what()).find("ambiguous"), std::string::npos) << e.what();
  }
}

// vLLM's structured outputs (structured_outputs, and the guided_ fields it
// replaced) become the request's grammar on both endpoints, named by their
// field where they fail; one constraint at most.
TEST_F(OpenAiRequest, StructuredOutputsBecomeTheRequestsGrammar) {
  const ServedModel m = served(4096);
  auto grammar_of = [&](const std::string& extra, bool chat) {
    const ordered_json body = ordered_json::parse(
        (chat ? std::string(R"({"messages": [{"role": "user", "content": "x"}])") : R"({"prompt": "x")") + extra + "}");
    const CompletionRequest r = chat ? parse_chat_request(body, m) : parse_completion_request(body, m);
    return r.options.grammar;
  };
  struct Case {
    std::string extra, source, match, mismatch;
  };
  const std::vector<Case> cases = {
      {R"(, "structured_outputs": {"choice": ["positive", "negative"]})", "structured_outputs.choice", "negative",
       "neutral"},
      {R"(, "structured_outputs": {"regex": "\\w+@\\w+\\.com\\n"})", "structured_outputs.regex", "a@b.com\n",
       "a@b.com"},
      {R"(, "structured_outputs": {"grammar": "root ::= \"SELECT \" [a-z]+"})", "structured_outputs.grammar",
       "SELECT x", "SELECT 1"},
      {R"(, "structured_outputs": {"json": {"type": "integer"}, "regex": null, "disable_any_whitespace": false})",
       "structured_outputs.json", "12", "\"12\""},
      {R"(, "structured_outputs": {"json": "{\"type\": \"boolean\"}"})", "structured_outputs.json", "true", "1"},
      {R"(, "structured_outputs": {"json_object": true})", "structured_outputs.json_object", "{}", "[]"},
      {R"(, "guided_choice": ["a", "b"], "guided_decoding_backend": "xgrammar")", "guided_choice", "b", "c"},
      {R"(, "guided_regex": "[0-9]{2}")", "guided_regex", "42", "4"},
      {R"(, "guided_json": {"type": "string"})", "guided_json", "\"x\"", "x"},
      {R"(, "guided_grammar": "root ::= \"yes\" | \"no\"")", "guided_grammar", "no", "yes no"},
      {R"(, "grammar": "root ::= [0-9]+")", "grammar", "12", "1a"},  // llama-server's
      {R"(, "json_schema": {"type": "null"})", "json_schema", "null", "0"}};
  for (const bool chat : {true, false})
    for (const Case& c : cases) {
      SCOPED_TRACE(c.extra);
      const std::shared_ptr<const OutputGrammar> g = grammar_of(c.extra, chat);
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(g->source, c.source);
      EXPECT_EQ(g->think_open >= 0, chat);  // a chat reply may reason first, as with response_format
      grammar::Matcher match(g->grammar), mismatch(g->grammar);
      EXPECT_TRUE(match.advance(c.match) && match.state().accepting);
      EXPECT_FALSE(mismatch.advance(c.mismatch) && mismatch.state().accepting);
    }

  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {R"("structured_outputs": "choice")", "structured_outputs", "must be an object"},
      {R"("structured_outputs": {})", "structured_outputs", "must give one constraint"},
      {R"("structured_outputs": {"regex": "a", "choice": ["a"]})", "structured_outputs", "2 constraints"},
      {R"("structured_outputs": {"regx": "a"})", "structured_outputs", "structured_outputs.regx"},
      {R"("structured_outputs": {"choice": []})", "structured_outputs.choice", "non-empty list of strings"},
      {R"("structured_outputs": {"choice": ["a", 1]})", "structured_outputs.choice", "non-empty list of strings"},
      {R"("structured_outputs": {"regex": "\\bx"})", "structured_outputs.regex", "word boundaries"},
      {R"("structured_outputs": {"regex": 5})", "structured_outputs.regex", "must be a string"},
      {R"("structured_outputs": {"grammar": "root ::= item"})", "structured_outputs.grammar",
       "'item' is used but never defined (line 1, column 10)"},
      {R"("structured_outputs": {"json": "{"})", "structured_outputs.json", "holds no JSON document"},
      {R"("structured_outputs": {"json": {"multipleOf": 2}})", "structured_outputs.json", "multipleOf"},
      {R"("structured_outputs": {"json_object": false})", "structured_outputs.json_object", "must be true"},
      {R"("structured_outputs": {"structural_tag": "{}"})", "structured_outputs.structural_tag", "not supported"},
      {R"("structured_outputs": {"regex": "a", "disable_any_whitespace": true})",
       "structured_outputs.disable_any_whitespace", "not supported"},
      {R"("structured_outputs": {"regex": "a"}, "guided_choice": ["a"])", "guided_choice", "cannot both constrain"},
      {R"("guided_json": {}, "response_format": {"type": "json_object"})", "guided_json", "cannot both constrain"},
      {R"("guided_regex": "a", "guided_whitespace_pattern": " *")", "guided_whitespace_pattern", "not supported"},
      {R"("guided_grammar": "root ::= root \"a\"")", "guided_grammar", "left-recursive"},
      {R"("guided_decoding_backend": 1)", "guided_decoding_backend", "must be a string"},
      {R"("grammar": "root ::= \"a\"", "json_schema": {})", "json_schema", "cannot both constrain"}};
  expect_400s_on_both_endpoints(bad);
  // A README hunt's finding: vLLM's "grammar" field's errors said "grammar: grammar: ...".
  const ApiError gbnf = error_of(R"({"prompt": "x", "grammar": "root ::= item"})", false, 4096);
  EXPECT_EQ(gbnf.param, "grammar");
  EXPECT_EQ(std::string(gbnf.what()).rfind("grammar: the rule 'item' is used but never defined", 0), 0u) << gbnf.what();
  // Found by hand: 7 MB of choices took 600 MB to be refused (an expression per byte).
  ordered_json huge = {{"prompt", "x"}};
  huge["structured_outputs"]["choice"] = ordered_json::array();
  for (int i = 0; i < 1100; ++i)
    huge["structured_outputs"]["choice"].push_back(std::string(1000, 'a') + std::to_string(i));
  ApiError e = error_of(huge.dump(), false, 4096);
  EXPECT_EQ(e.param, "structured_outputs.choice");
  EXPECT_NE(std::string(e.what()).find("bytes of text; at most 1048576"), std::string::npos) << e.what();
  huge = {{"prompt", "x"}, {"guided_grammar", "root ::= \"" + std::string(1100000, 'a') + "\""}};
  e = error_of(huge.dump(), false, 4096);
  EXPECT_EQ(e.param, "guided_grammar");
  EXPECT_NE(std::string(e.what()).find("bytes of text; at most 1048576"), std::string::npos) << e.what();
  const ApiError tools = error_of(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
      "function": {"name": "f"}}], "tool_choice": "required", "structured_outputs": {"choice": ["a"]}})",
                                  true, 4096);
  EXPECT_EQ(tools.param, "tool_choice");
  EXPECT_NE(std::string(tools.what()).find("cannot both constrain"), std::string::npos) << tools.what();
}

// A choice among thousands of labels sharing a prefix (a classifier's
// classes): was refused, "more than 4096 ways to continue at once", each
// label a stack of its own; the labels are a trie, one way per next byte.
TEST_F(OpenAiRequest, AChoiceAmongThousandsOfLabelsLeavesOneWayPerByte) {
  const ServedModel m = served(4096);
  ordered_json body = {{"prompt", "x"}};
  body["structured_outputs"]["choice"] = ordered_json::array();
  for (int i = 0; i < 10000; ++i) body["structured_outputs"]["choice"].push_back("label_" + std::to_string(i));
  body["structured_outputs"]["choice"].push_back("label_7");  // twice: still one way
  const CompletionRequest r = parse_completion_request(body, m);
  ASSERT_NE(r.options.grammar, nullptr);
  grammar::Matcher whole(r.options.grammar->grammar), prefix(r.options.grammar->grammar),
      other(r.options.grammar->grammar);
  ASSERT_TRUE(whole.advance("label_"));
  EXPECT_EQ(whole.state().stacks.size(), 10u);  // one per digit that may come next
  EXPECT_TRUE(whole.advance("9999") && whole.state().accepting && whole.state().stacks.empty());
  EXPECT_TRUE(prefix.advance("label_7") && prefix.state().accepting);  // label_7 or on to label_70...
  EXPECT_FALSE(prefix.state().stacks.empty());
  EXPECT_FALSE(other.advance("label_10000"));
}

// vLLM's bad_words: each word's ids at the start of a text, and after a
// space where that gives another first id and as many ids (Qwen3's ids).
TEST_F(OpenAiRequest, BadWordsBecomeTheIdsThatSpellThem) {
  const ServedModel m = served(4096);
  for (const bool chat : {true, false}) {
    ordered_json body = chat ? ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}]})")
                             : ordered_json::parse(R"({"prompt": "x"})");
    body["bad_words"] = {"hello", " \u3000 Hello there", "<|im_end|>", "qinferx"};  // Unicode space dropped too
    const CompletionRequest r = chat ? parse_chat_request(body, m) : parse_completion_request(body, m);
    const std::vector<std::vector<int32_t>> expected = {
        {14990},         {23811},             // "hello", " hello"
        {9707, 1052},    {21927, 1052},       // "Hello there", " Hello there"
        {151645},                             // " <|im_end|>": two ids
        {80, 89559, 87}, {2804, 89559, 87}};  // "q" "infer" "x"
    EXPECT_EQ(r.options.bad_words, expected);
  }
  std::string many = R"("bad_words": [)";
  for (int i = 0; i < 129; ++i) many += std::string(i ? "," : "") + "\"w\"";
  many += "]";
  std::string words;  // 1100 ids
  for (int i = 0; i < 1100; ++i) words += "the ";
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {R"("bad_words": "hello")", "bad_words", "must be a list of at most 128 strings"},
      {R"("bad_words": ["a", 1])", "bad_words", "must be a list of at most 128 strings"},
      {R"("bad_words": [" \t\u3000\u00a0"])", "bad_words", "more than whitespace"},
      {R"("bad_words": ["hello"], "allowed_token_ids": [14990, 23811])", "bad_words", "ban every id"},
      {many, "bad_words", "at most 128"},
      {R"("bad_words": [")" + words + "\"]", "bad_words", "more than 1024 tokens"}};
  expect_400s_on_both_endpoints(bad);
}

// vLLM's sampling extras on both endpoints: stop_token_ids, min_tokens,
// allowed_token_ids, include_stop_str_in_output; each bad value a 400 naming it.
TEST_F(OpenAiRequest, VllmSamplingExtrasBecomeTheRequestsOptions) {
  const ServedModel m = served(4096);
  for (const bool chat : {true, false}) {
    ordered_json body = chat ? ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}]})")
                             : ordered_json::parse(R"({"prompt": "x"})");
    body["stop_token_ids"] = {13, 11};
    body["min_tokens"] = 5;
    body["allowed_token_ids"] = {13, 220};
    body["include_stop_str_in_output"] = true;
    body["max_tokens"] = 10;
    const CompletionRequest r = chat ? parse_chat_request(body, m) : parse_completion_request(body, m);
    EXPECT_EQ(r.options.stop_ids, (std::vector<int32_t>{13, 11}));
    EXPECT_EQ(r.options.min_tokens, 5);
    EXPECT_EQ(r.options.allowed_ids, (std::vector<int32_t>{13, 220}));
    EXPECT_TRUE(r.text.include_stop_string);
    // The text holds back the stop ids and the eos ids (not under ignore_eos): those that may end it.
    std::vector<int32_t> ending = {13, 11};
    ending.insert(ending.end(), r.options.eos_ids.begin(), r.options.eos_ids.end());
    EXPECT_FALSE(r.options.eos_ids.empty());
    EXPECT_EQ(r.text.stop_ids, ending);
    EXPECT_EQ(r.text.min_tokens, 5);
    EXPECT_TRUE(r.text.skip_special_tokens);
    body["ignore_eos"] = true;
    body["skip_special_tokens"] = false;
    const CompletionRequest ignoring = chat ? parse_chat_request(body, m) : parse_completion_request(body, m);
    EXPECT_EQ(ignoring.text.stop_ids, (std::vector<int32_t>{13, 11}));
    EXPECT_FALSE(ignoring.text.skip_special_tokens);
    const CompletionRequest plain = chat ? parse_chat_request(ordered_json::parse(R"({"messages": [{"role": "user",
        "content": "x"}]})"),
                                                              m)
                                         : parse_completion_request(ordered_json::parse(R"({"prompt": "x"})"), m);
    EXPECT_TRUE(plain.options.stop_ids.empty() && plain.options.allowed_ids.empty());
    EXPECT_EQ(plain.options.min_tokens, 0);
    EXPECT_FALSE(plain.text.include_stop_string);
  }
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {R"("stop_token_ids": 13)", "stop_token_ids", "list of token ids"},
      {R"("stop_token_ids": [-1])", "stop_token_ids", "not a token id"},
      {R"("stop_token_ids": [151936])", "stop_token_ids", "not a token id in [0, 151936)"},
      {R"("stop_token_ids": [1.5])", "stop_token_ids", "not a token id"},
      {R"("allowed_token_ids": [])", "allowed_token_ids", "non-empty list"},
      {R"("min_tokens": -1)", "min_tokens", "between 0"},
      {R"("min_tokens": 11, "max_tokens": 10)", "min_tokens", "at most max_tokens (10)"},
      {R"("include_stop_str_in_output": 1)", "include_stop_str_in_output", "true or false"},
      // A review finding: a 500 ("no token has a finite logit") once the request ran.
      {R"("allowed_token_ids": [151645, 13], "stop_token_ids": [13], "min_tokens": 2)", "min_tokens",
       "nothing could be drawn"}};
  expect_400s_on_both_endpoints(bad);
}

// vLLM's thinking_token_budget: a chat field (a messages line's too), counted
// in the tokenizer's <think> block; -1 or absent: none.
TEST_F(OpenAiRequest, ThinkingTokenBudgetCountsTheThinkBlock) {
  const ServedModel m = served(4096);
  ordered_json body = ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(parse_chat_request(body, m).options.thinking.tokens, -1);
  body["thinking_token_budget"] = 64;
  const ThinkingBudget t = parse_chat_request(body, m).options.thinking;
  EXPECT_EQ(t.tokens, 64);
  EXPECT_EQ(t.open_id, bundle_->tokenizer->token_to_id("<think>").value());
  EXPECT_EQ(t.close_id, bundle_->tokenizer->token_to_id("</think>").value());
  EXPECT_FALSE(t.starts_open);
  for (const char* bad : {R"(-2)", R"(1.5)", R"("64")", R"(true)"}) {
    const ApiError e = error_of(
        std::string(R"({"messages": [{"role": "user", "content": "x"}], "thinking_token_budget": )") + bad + "}", true,
        4096);
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, "thinking_token_budget") << bad;
  }
  EXPECT_EQ(error_of(R"({"prompt": "x", "thinking_token_budget": 5})", false, 4096).param, "thinking_token_budget");
}
