// The Responses API onto the chat endpoint and back: input items as chat
// messages, what a stateless server cannot do refused by name, chat answers
// (whole, or chunk by chunk) as Response objects and typed events.
#include "server/responses_api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/model_bundle.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "test_util.h"

using namespace qinfer::server;
using nlohmann::ordered_json;

namespace {

std::string error_param(const char* body) {
  try {
    chat_body_of_response_request(ordered_json::parse(body));
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body;
    return e.param;
  }
  return "(accepted)";
}

ResponseContext context() {
  return {"resp_abc", 7, "m", ordered_json::parse(R"({"input": "x", "max_output_tokens": 9})"), 0.5, 1};
}

// The events of SSE text, in order.
std::vector<ordered_json> events_of(const std::string& text) {
  std::vector<ordered_json> out;
  for (size_t at = text.find("data: "); at != std::string::npos; at = text.find("data: ", at)) {
    const size_t end = text.find("\n\n", at);
    out.push_back(ordered_json::parse(text.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

}  // namespace

TEST(ResponsesApi, InputItemsBecomeTheConversation) {
  const ordered_json chat = chat_body_of_response_request(ordered_json::parse(R"({
      "model": "m", "instructions": "Be brief.", "max_output_tokens": 50, "stream": true, "top_k": 5,
      "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Call it."}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\": \"Rome\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "21"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Warm."}]}],
      "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": true}],
      "tool_choice": {"type": "function", "name": "get_weather"},
      "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": true}},
      "reasoning": {"effort": "low", "summary": "auto"}})"));
  const ordered_json expected = ordered_json::parse(R"({
      "model": "m", "stream": true, "top_k": 5,
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": "", "reasoning_content": "Call it.", "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21"},
        {"role": "assistant", "content": [{"type": "text", "text": "Warm."}]}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"},
                                                  "strict": true}}],
      "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
      "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"},
                                                                 "strict": true}},
      "reasoning_effort": "low",
      "max_completion_tokens": 50,
      "stream_options": {"include_usage": true}})");
  EXPECT_EQ(chat, expected) << chat.dump(2);
  EXPECT_EQ(chat_body_of_response_request(ordered_json::parse(R"({"input": "Hi"})"))["messages"],
            ordered_json::parse(R"([{"role": "user", "content": "Hi"}])"));
}

TEST(ResponsesApi, WhatAStatelessServerCannotDoIsA400NamingIt) {
  EXPECT_EQ(error_param(R"({"input": "x", "previous_response_id": "resp_1"})"), "previous_response_id");
  EXPECT_EQ(error_param(R"({"input": "x", "conversation": "conv_1"})"), "conversation");
  EXPECT_EQ(error_param(R"({"input": "x", "background": true})"), "background");
  EXPECT_EQ(error_param(R"({"input": "x", "include": ["file_search_call.results"]})"), "include[0]");
  EXPECT_EQ(error_param(R"({"input": "x", "include": "reasoning.encrypted_content"})"), "include");
  EXPECT_EQ(error_param(R"({"input": "x", "stream_options": {"include_usage": true}})"),
            "stream_options.include_usage");
  EXPECT_EQ(error_param(R"({"input": "x", "stream_options": {"include_obfuscation": 1}})"),
            "stream_options.include_obfuscation");
  EXPECT_EQ(error_param(R"({"input": "x", "tools": [{"type": "web_search"}]})"), "tools[0]");
  EXPECT_EQ(error_param(R"({"input": "x", "tool_choice": {"type": "web_search"}})"), "tool_choice");
  EXPECT_EQ(error_param(R"({"input": [{"type": "item_reference", "id": "x"}]})"), "input[0].type");
  EXPECT_EQ(error_param(R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})"),
            "input[0].content[0]");
  EXPECT_EQ(error_param(R"({"input": [{"role": "robot", "content": "x"}]})"), "input[0].role");
  EXPECT_EQ(error_param(R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})"),
            "input[0].call_id");
  EXPECT_EQ(error_param(R"({"input": []})"), "input");
  EXPECT_EQ(error_param(R"({"model": "m"})"), "input");
  // A review finding: the output of a call the input does not hold was taken (OpenAI refuses it).
  EXPECT_EQ(error_param(R"({"input": [{"type": "function_call_output", "call_id": "zz", "output": "1"}]})"),
            "input[0].call_id");
  EXPECT_EQ(error_param(R"({"input": [{"type": "function_call_output", "call_id": "c", "output": "1"},
                                      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]})"),
            "input[0].call_id");
  EXPECT_EQ(error_param(R"({"input": "x", "truncation": "sometimes"})"), "truncation");
  EXPECT_EQ(error_param(R"({"input": "x", "text": {"format": {"type": "grammar"}}})"), "text.format");
  EXPECT_EQ(error_param(R"({"input": "x", "reasoning": {"effort": "low", "budget": 1}})"), "reasoning.budget");
  EXPECT_EQ(error_param(R"({"input": "x", "max_tokenz": 1})"), "max_tokenz");
  // What asks for nothing it lacks passes: a stateless client's reasoning
  // (its items carry their text, which goes back as input), obfuscation off.
  EXPECT_EQ(error_param(R"({"input": "x", "store": true, "include": [], "background": false, "truncation":
                            "disabled", "previous_response_id": null, "metadata": {"a": "b"}})"),
            "(accepted)");
  EXPECT_EQ(error_param(R"({"input": "x", "store": false, "include": ["reasoning.encrypted_content"],
                            "stream": true, "stream_options": {"include_obfuscation": false}})"),
            "(accepted)");
  // Hunt findings: prompt_cache_retention (a label, as on chat) and the default verbosity were refused;
  // metadata values of any type, and a user of any type, were taken and echoed back as given.
  EXPECT_EQ(error_param(R"({"input": "x", "prompt_cache_retention": "24h", "text": {"verbosity": "medium"}})"),
            "(accepted)");
  EXPECT_EQ(error_param(R"({"input": "x", "metadata": {"a": 1}})"), "metadata");
  EXPECT_EQ(error_param(R"({"input": "x", "user": 5})"), "user");
  // 512 characters, not bytes (a review finding: 509 letters and 3 accented ones, 515 bytes, were refused).
  const std::string e_acute = "\xc3\xa9";
  const auto with_value = [](const std::string& value) {
    return ordered_json({{"input", "x"}, {"metadata", {{"k", value}}}}).dump();
  };
  EXPECT_EQ(error_param(with_value(std::string(509, 'x') + e_acute + e_acute + e_acute).c_str()), "(accepted)");
  EXPECT_EQ(error_param(with_value(std::string(510, 'x') + e_acute + e_acute + e_acute).c_str()), "metadata");
  ordered_json seventeen = ordered_json::object();
  for (int i = 0; i < 17; ++i) seventeen["k" + std::to_string(i)] = "v";
  EXPECT_EQ(error_param(ordered_json({{"input", "x"}, {"metadata", seventeen}}).dump().c_str()), "metadata");
}

// A hunt finding: a reasoning item with no reply after it became the
// reasoning of a later turn's assistant message.
TEST(ResponsesApi, AReasoningItemWithoutItsReplyIsOfNoLaterTurn) {
  const ordered_json chat = chat_body_of_response_request(ordered_json::parse(R"({"input": [
      {"role": "user", "content": "q"},
      {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "stale"}]},
      {"role": "user", "content": "q2"},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]})"));
  ASSERT_EQ(chat["messages"].size(), 3u);
  EXPECT_FALSE(chat["messages"][2].contains("reasoning_content")) << chat.dump();
}

// What serve --ignore-unknown-fields drops from a Responses request: the
// fields it refuses as unrecognized, not the ones it refuses by name nor the
// chat names of its own fields (max_tokens: dropped, the reply would have no
// cap).
TEST(ResponsesApi, UnknownFieldsAreThoseItDoesNotRecognize) {
  const ordered_json body = ordered_json::parse(R"({"input": "x", "typical_p": 0.9, "max_tokens": 3, "background": true,
      "max_output_tokens": 4, "temperature": 1, "seed": 2, "mirostat_mode": 2})");
  EXPECT_EQ(unknown_response_fields(body), (std::vector<std::string>{"typical_p", "mirostat_mode"}));
  ordered_json kept = body;
  for (const std::string& key : unknown_response_fields(body)) kept.erase(key);
  EXPECT_EQ(error_param(kept.dump().c_str()), "max_tokens");  // dropped, the reply would have no cap
  kept.erase("max_tokens");
  EXPECT_EQ(error_param(kept.dump().c_str()), "background");
  kept.erase("background");
  EXPECT_EQ(error_param(kept.dump().c_str()), "(accepted)");
}

TEST(ResponsesApi, AChatAnswerBecomesAResponse) {
  const ordered_json answer = ordered_json::parse(R"({"choices": [{"index": 0, "message": {"role": "assistant",
      "content": "Hi", "reasoning_content": "Think.", "tool_calls": [{"id": "call_9", "type": "function",
      "function": {"name": "f", "arguments": "{}"}, "content_before": 2}]}, "finish_reason": "length"}],
      "usage": {"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13,
                "prompt_tokens_details": {"cached_tokens": 2}, "completion_tokens_details": {"reasoning_tokens": 3}}})");
  const ordered_json r = response_of_chat_answer(context(), answer);
  EXPECT_EQ(r["id"], "resp_abc");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["max_output_tokens"], 9);
  EXPECT_EQ(r["temperature"], 0.5);
  const ordered_json& out = r["output"];
  ASSERT_EQ(out.size(), 3u) << r.dump(2);
  EXPECT_EQ(out[0], ordered_json::parse(R"({"id": "rs_abc", "type": "reasoning", "summary": [],
      "content": [{"type": "reasoning_text", "text": "Think."}]})"));
  EXPECT_EQ(out[1]["status"], "completed");  // the call after it is the last item
  EXPECT_EQ(out[1]["content"][0]["text"], "Hi");
  // The reply was cut with the call last: it may have been cut inside it, as the stream has it too.
  EXPECT_EQ(out[2], ordered_json::parse(R"({"id": "fc_abc_0", "type": "function_call", "status": "incomplete",
      "arguments": "{}", "call_id": "call_9", "name": "f"})"));
  EXPECT_EQ(r["usage"], ordered_json::parse(R"({"input_tokens": 4, "input_tokens_details": {"cached_tokens": 2},
      "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 13})"));
  EXPECT_EQ(r["truncation"], "disabled");
  ResponseContext truncating = context();
  truncating.request["truncation"] = "auto";
  EXPECT_EQ(response_of_chat_answer(truncating, answer)["truncation"], "auto");
  EXPECT_TRUE(drops_input_to_fit(truncating.request));
  EXPECT_FALSE(drops_input_to_fit(context().request));
}

TEST(ResponsesApi, ChunksBecomeEventsThatAddUpToTheResponse) {
  ResponseEvents events(context());
  std::string text;
  for (const char* chunk :
       {R"({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]})",
        R"({"choices": [{"index": 0, "delta": {"reasoning_content": "Th"}, "finish_reason": null}]})",
        R"({"choices": [{"index": 0, "delta": {"reasoning_content": "ink."}, "finish_reason": null}]})",
        R"({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
               "function": {"name": "f", "arguments": "{}"}, "content_before": 0}]}, "finish_reason": null}]})",
        R"({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})",
        R"({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13,
               "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 4}}})"})
    text += events.on(ordered_json::parse(chunk));
  const std::vector<ordered_json> e = events_of(text);
  std::vector<std::string> types;
  for (size_t i = 0; i < e.size(); ++i) {
    types.push_back(e[i]["type"]);
    EXPECT_EQ(e[i]["sequence_number"], i);
  }
  const std::vector<std::string> expected = {
      "response.created", "response.in_progress",
      // the reasoning item
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
      "response.output_item.done",
      // the message
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      // the call
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done", "response.completed"};
  EXPECT_EQ(types, expected);
  EXPECT_NE(text.find("event: response.output_text.delta\ndata: {"), std::string::npos);
  const ordered_json& done = e.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 3u) << done.dump(2);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Think.");
  EXPECT_EQ(done["output"][1]["content"][0]["text"], "Hi");
  EXPECT_EQ(done["output"][1]["status"], "completed");
  EXPECT_EQ(done["output"][2]["call_id"], "call_9");
  EXPECT_EQ(e[15]["item"]["arguments"], "");  // added empty, then its arguments as one delta
  EXPECT_EQ(e[17]["name"], "f");
  EXPECT_EQ(done["usage"]["output_tokens"], 9);
  EXPECT_EQ(done["usage"]["output_tokens_details"]["reasoning_tokens"], 4);

  // A failure after the answer began: an error event, then response.failed.
  ResponseEvents failing(context());
  failing.on(ordered_json::parse(R"({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]})"));
  const std::vector<ordered_json> f = events_of(failing.on(ApiError(503, "the server is shutting down").to_json()));
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.back()["type"], "response.failed");
  EXPECT_EQ(f.back()["response"]["status"], "failed");
  EXPECT_EQ(f.back()["response"]["error"]["message"], "the server is shutting down");
  EXPECT_EQ(f[f.size() - 2]["type"], "error");
  EXPECT_EQ(f.back()["response"]["output"][0]["status"], "incomplete");
  EXPECT_EQ(f.back()["response"]["error"]["code"], "server_error");  // one of ResponseError's codes

  // A grammar that cannot go on: the client's, named by this API's field.
  ResponseEvents refused(context());
  const std::vector<ordered_json> g =
      events_of(refused.on(ApiError(400, "'response_format' allows nothing here", "response_format").to_json()));
  ASSERT_GE(g.size(), 2u);
  EXPECT_EQ(g[g.size() - 2]["param"], "text.format");
  EXPECT_EQ(g[g.size() - 2]["message"], "'text.format' allows nothing here");
  EXPECT_EQ(g.back()["response"]["error"]["code"], "invalid_prompt");
}

// An audit finding: text after a tool call opened a second message item with
// the first one's id, and the whole answer put all the text in one message
// before the calls. Now each message has its own id, and the stream adds up
// to the whole answer's Response, however its text fell into chunks.
TEST(ResponsesApi, TextAfterAToolCallIsAMessageItemOfItsOwn) {
  const char* usage = R"({"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13,
      "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}})";
  const ordered_json call = ordered_json::parse(
      R"({"index": 0, "id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}})");
  auto chunk = [&](const std::string& content, int64_t call_at, const char* finish) {
    ordered_json delta = {{"content", content}};
    if (call_at >= 0) {
      delta["tool_calls"] = ordered_json::array({call});
      delta["tool_calls"][0]["content_before"] = call_at;
    }
    return ordered_json{
        {"choices",
         {{{"index", 0}, {"delta", delta}, {"finish_reason", finish ? ordered_json(finish) : ordered_json()}}}}};
  };
  ordered_json whole_call = call;
  whole_call.erase("index");
  whole_call["content_before"] = 12;
  const ordered_json answer = {
      {"choices",
       {{{"index", 0},
         {"message", {{"role", "assistant"}, {"content", "I will look.Then I answer!"}, {"tool_calls", {whole_call}}}},
         {"finish_reason", "tool_calls"}}}},
      {"usage", ordered_json::parse(usage)}};
  const ordered_json expected = response_of_chat_answer(context(), answer);
  const ordered_json& out = expected["output"];
  ASSERT_EQ(out.size(), 3u) << expected.dump(2);
  EXPECT_EQ(out[0]["id"], "msg_abc");
  EXPECT_EQ(out[0]["content"][0]["text"], "I will look.");
  EXPECT_EQ(out[1]["id"], "fc_abc_0");
  EXPECT_EQ(out[2]["id"], "msg_abc_1");
  EXPECT_EQ(out[2]["content"][0]["text"], "Then I answer!");

  // The call's arguments in pieces: announced with the first, the rest continuations (an index, no id).
  ordered_json announced = chunk("I will look.", 12, nullptr);
  announced["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = "{";
  const ordered_json more = ordered_json::parse(
      R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
          "finish_reason": null}]})");
  // The text before the call, the call and some text after it in one chunk; or each in its own.
  const std::vector<std::vector<ordered_json>> streams = {
      {chunk("I will look.Then", 12, nullptr), chunk(" I answer!", -1, "tool_calls")},
      {chunk("I will", -1, nullptr), chunk(" look.", -1, nullptr), chunk("", 0, nullptr),
       chunk("Then I answer!", -1, "tool_calls")},
      {announced, more, chunk("Then I answer!", -1, "tool_calls")}};
  for (const auto& stream : streams) {
    ResponseEvents events(context());
    std::string text;
    for (const ordered_json& c : stream) text += events.on(c);
    text += events.on(ordered_json{{"choices", ordered_json::array()}, {"usage", ordered_json::parse(usage)}});
    const std::vector<ordered_json> e = events_of(text);
    EXPECT_EQ(e.back()["response"]["output"], out) << e.back().dump(2);
    std::vector<std::string> added;
    for (const ordered_json& event : e)
      if (event["type"] == "response.output_item.added") added.push_back(event["item"]["id"]);
    EXPECT_EQ(added, (std::vector<std::string>{"msg_abc", "fc_abc_0", "msg_abc_1"}));
    std::string arguments;
    for (const ordered_json& event : e) {
      if (event["type"] == "response.function_call_arguments.delta") arguments += event["delta"].get<std::string>();
      if (event["type"] == "response.function_call_arguments.done") {
        EXPECT_EQ(event["arguments"], arguments);
      }
    }
    EXPECT_EQ(arguments, "{}");
  }
}

// Hunt findings: "stream": null was a 500; errors named the chat fields
// (messages, max_completion_tokens, response_format) the client never sent;
// max_tokens (chat's) passed; metadata of any type was echoed; refusals of
// top_logprobs and max_tool_calls blamed a store the server does not keep.
TEST(ResponsesApi, ErrorsNameTheResponsesFields) {
  static const qinfer::ModelBundle bundle = qinfer::load_model_bundle(qinfer::test::data_path("models/tiny"));
  const ServedModel served{bundle, "tiny", 64};
  auto error_of = [&](const std::string& body) {
    try {
      try {
        parse_chat_request(chat_body_of_response_request(ordered_json::parse(body)), served);
      } catch (const ApiError& e) {
        throw as_response_request_error(e);
      }
    } catch (const ApiError& e) {
      return e;
    }
    return ApiError(0, "accepted");
  };
  struct Case {
    std::string body, param, message_part;
  };
  const std::vector<Case> cases = {
      {R"({"input": "x", "stream": "yes"})", "stream", "'stream' must be true or false"},
      {R"({"input": ")" + std::string(300, 'x') + " " + std::string(300, 'y') + R"("})", "input", "your input"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens", "'max_output_tokens' must be between"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {}}}})", "text.format",
       "'text.format.name'"},
      {R"({"input": "x", "reasoning": {"effort": "max"}})", "reasoning.effort", "'reasoning.effort' must be one of"},
      {R"({"input": "x", "max_tokens": 3})", "max_tokens", "this API's is max_output_tokens"},
      {R"({"input": "x", "metadata": 5})", "metadata", "an object"},
      {R"({"input": "x", "top_logprobs": 21})", "top_logprobs", "from 0 to 20"},
      {R"({"input": "x", "top_logprobs": "3"})", "top_logprobs", "from 0 to 20"},
      {R"({"input": "x", "top_logprobs": 2.5})", "top_logprobs", "from 0 to 20"},
      {R"({"input": "x", "top_logprobs": true})", "top_logprobs", "from 0 to 20"},
      {R"({"input": "x", "max_tool_calls": 3})", "max_tool_calls", "not supported by this server"},
      // A hunt finding: a schema's own error began "response_format: json_schema:".
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"multipleOf": 2}}}})",
       "text.format", "text.format: json_schema: /multipleOf"},

  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.body << ": " << e.what();
  }
  EXPECT_EQ(error_of(R"({"input": "x", "max_tool_calls": 3})").what(),
            std::string("'max_tool_calls' is not supported by this server"));
  for (const char* body : {R"({"input": "x", "stream": null, "top_logprobs": 0})",
                           R"({"input": "x", "chat_template_kwargs": {"enable_thinking": false}})"})
    EXPECT_EQ(error_of(body).status, 0) << body;
  // chat_template_kwargs as on chat: thinking off closes the block in the prompt.
  const CompletionRequest r = parse_chat_request(
      chat_body_of_response_request(
          ordered_json::parse(R"({"input": "x", "chat_template_kwargs": {"enable_thinking": false}})")),
      served);
  EXPECT_NE(bundle.require_tokenizer().decode(r.prompts[0]).find("<think>\n\n</think>"), std::string::npos);
}

// The answer's log-probabilities (include: message.output_text.logprobs, as
// vLLM takes it: top_logprobs alternatives each, which alone asks for
// nothing), given to each message by where its tokens' bytes fall, whole or
// streamed.
TEST(ResponsesApi, LogprobsComeWithTheMessagesTheirTokensWrote) {
  const ordered_json asked = chat_body_of_response_request(
      ordered_json::parse(R"({"input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 2})"));
  EXPECT_EQ(asked["logprobs"], true);
  EXPECT_EQ(asked["top_logprobs"], 2);
  // A whole number written as a float, as chat takes it (a review finding: a 400 here).
  EXPECT_EQ(chat_body_of_response_request(ordered_json::parse(
                R"({"input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 3.0})"))["top_logprobs"],
            3.0);
  EXPECT_EQ(chat_body_of_response_request(
                ordered_json::parse(R"({"input": "x", "include": ["message.output_text.logprobs"]})"))["top_logprobs"],
            0);
  EXPECT_FALSE(
      chat_body_of_response_request(ordered_json::parse(R"({"input": "x", "top_logprobs": 2})")).contains("logprobs"));

  auto token = [](const std::string& text, float logprob) {
    return ordered_json{{"token", text},
                        {"logprob", logprob},
                        {"bytes", std::vector<uint8_t>(text.begin(), text.end())},
                        {"top_logprobs", ordered_json::array()}};
  };
  const ordered_json tokens = {token("I will", -0.5f), token(" look.", -0.25f), token("Then", -1), token(" yes", -2)};
  // As CompletionRun sends them: each with where its text came out in the content (" look." held back with "I will").
  ordered_json placed_tokens = tokens;
  for (const auto& [k, at] : {std::pair{0, 0}, std::pair{1, 0}, std::pair{2, 12}, std::pair{3, 16}})
    placed_tokens[k]["content_at"] = at;
  ordered_json call = ordered_json::parse(
      R"({"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}, "content_before": 12})");
  const ordered_json answer = {
      {"choices",
       {{{"index", 0},
         {"message", {{"role", "assistant"}, {"content", "I will look.Then yes"}, {"tool_calls", {call}}}},
         {"logprobs", {{"content", placed_tokens}}},
         {"finish_reason", "tool_calls"}}}},
      {"usage", ordered_json::parse(R"({"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13,
          "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}})")}};
  ResponseContext with = context();
  with.logprobs = true;
  const ordered_json out = response_of_chat_answer(with, answer)["output"];
  ASSERT_EQ(out.size(), 3u) << out.dump(2);
  EXPECT_EQ(out[0]["content"][0]["logprobs"], ordered_json({tokens[0], tokens[1]}));
  EXPECT_EQ(out[2]["content"][0]["logprobs"], ordered_json({tokens[2], tokens[3]}));
  EXPECT_FALSE(response_of_chat_answer(context(), answer)["output"][0]["content"][0].contains("logprobs"));

  // Streamed: each token goes out with the text it came out with.
  call.erase("content_before");
  call["index"] = 0;
  auto chunk = [&](const std::string& content, const ordered_json& lps, const ordered_json& calls, const char* finish) {
    ordered_json delta = {{"content", content}};
    if (!calls.is_null()) delta["tool_calls"] = calls;
    return ordered_json{{"choices",
                         {{{"index", 0},
                           {"delta", delta},
                           {"logprobs", lps.is_null() ? ordered_json() : ordered_json{{"content", lps}}},
                           {"finish_reason", finish ? ordered_json(finish) : ordered_json()}}}}};
  };
  ordered_json placed = call;
  placed["content_before"] = 0;
  ResponseEvents events(with);
  std::string text;
  const auto array = [](ordered_json item) {  // a list of one (braces alone would copy the item)
    ordered_json list = ordered_json::array();
    list.push_back(std::move(item));
    return list;
  };
  ordered_json first_two = array(placed_tokens[0]);
  first_two.push_back(placed_tokens[1]);
  text += events.on(chunk("I will look.", first_two, nullptr, nullptr));
  text += events.on(chunk("", nullptr, array(placed), nullptr));
  text += events.on(chunk("Then", array(placed_tokens[2]), nullptr, nullptr));
  text += events.on(chunk(" yes", array(placed_tokens[3]), nullptr, "tool_calls"));
  text += events.on(ordered_json{{"choices", ordered_json::array()}, {"usage", answer["usage"]}});
  const std::vector<ordered_json> e = events_of(text);
  EXPECT_EQ(e.back()["response"]["output"], out) << e.back().dump(2);
  ordered_json deltas = ordered_json::array(), done = ordered_json::array();
  for (const ordered_json& event : e) {
    if (event["type"] == "response.output_text.delta")
      for (const ordered_json& t : event["logprobs"]) deltas.push_back(t);
    if (event["type"] == "response.output_text.done")
      for (const ordered_json& t : event["logprobs"]) done.push_back(t);
  }
  EXPECT_EQ(deltas, tokens);
  EXPECT_EQ(done, tokens);
}

// A review finding: a reply cut by max_output_tokens after a whole call gave
// that call "incomplete" in the stream and "completed" in the whole answer.
TEST(ResponsesApi, ACallIsIncompleteOnlyWhereTheReplyWasCutInIt) {
  const ordered_json usage = ordered_json::parse(R"({"prompt_tokens": 4, "completion_tokens": 16,
      "total_tokens": 20, "prompt_tokens_details": {"cached_tokens": 0},
      "completion_tokens_details": {"reasoning_tokens": 0}})");
  const ordered_json call = ordered_json::parse(R"({"index": 0, "id": "call_9", "type": "function",
      "function": {"name": "f", "arguments": "{\"a\":1}"}, "content_before": 0})");
  ordered_json message = {{"role", "assistant"}, {"content", "Done"}, {"tool_calls", ordered_json::array()}};
  message["tool_calls"].push_back(call);
  const ordered_json whole = response_of_chat_answer(
      context(), {{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "length"}}}}, {"usage", usage}});
  ResponseEvents events(context());
  std::string text;
  ordered_json calls = ordered_json::array();
  calls.push_back(call);
  text += events.on({{"choices", {{{"index", 0}, {"delta", {{"tool_calls", calls}}}, {"finish_reason", nullptr}}}}});
  text += events.on({{"choices", {{{"index", 0}, {"delta", {{"content", "Done"}}}, {"finish_reason", "length"}}}}});
  text += events.on({{"choices", ordered_json::array()}, {"usage", usage}});
  const std::vector<ordered_json> e = events_of(text);
  EXPECT_EQ(e.back()["type"], "response.incomplete");
  EXPECT_EQ(e.back()["response"]["output"], whole["output"]) << e.back().dump(2);
  EXPECT_EQ(whole["output"][0]["status"], "completed");
  EXPECT_EQ(whole["output"][1]["status"], "incomplete");
  // The second review's: a reply cut inside its last call leaves that call incomplete, whole or streamed.
  message["content"] = nullptr;
  const ordered_json cut = response_of_chat_answer(
      context(), {{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "length"}}}}, {"usage", usage}});
  ResponseEvents cut_events(context());
  text = cut_events.on({{"choices", {{{"index", 0}, {"delta", {{"tool_calls", calls}}}, {"finish_reason", nullptr}}}}});
  text +=
      cut_events.on({{"choices", {{{"index", 0}, {"delta", ordered_json::object()}, {"finish_reason", "length"}}}}});
  text += cut_events.on({{"choices", ordered_json::array()}, {"usage", usage}});
  EXPECT_EQ(events_of(text).back()["response"]["output"], cut["output"]);
  EXPECT_EQ(cut["output"][0]["status"], "incomplete");
}
