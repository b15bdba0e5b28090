#include "server/responses_api.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "util/utf8.h"

namespace qinfer::server {

using nlohmann::ordered_json;

namespace {

const std::string& string_field(const ordered_json& item, const char* key, const std::string& param) {
  if (!item.contains(key) || !item[key].is_string())
    bad(param + "." + key, "'" + param + "." + key + "' must be a string");
  return item[key].get_ref<const std::string&>();
}

// A content as the chat endpoint takes it: a string, or text parts (which it
// joins one per line).
ordered_json text_content(const ordered_json& content, const std::string& param) {
  if (content.is_string()) return content;
  if (!content.is_array()) bad(param, "'" + param + "' must be a string or a list of content parts");
  ordered_json parts = ordered_json::array();
  for (size_t k = 0; k < content.size(); ++k) {
    const ordered_json& part = content[k];
    const std::string at = param + "[" + std::to_string(k) + "]";
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type != "input_text" && type != "output_text" && type != "text")
      bad(at, "'" + at + "': only text parts (input_text, output_text) are supported, got " +
                  input_excerpt(part.is_object() && part.contains("type") ? part["type"].dump() : part.dump()));
    parts.push_back({{"type", "text"}, {"text", string_field(part, "text", at)}});
  }
  return parts;
}

// The text of a reasoning item given back: its reasoning_text parts, or its summary.
std::string reasoning_text(const ordered_json& item, const std::string& param) {
  std::string text;
  for (const char* key : {"content", "summary"}) {
    if (!given(item, key)) continue;
    if (!item[key].is_array()) bad(param + "." + key, "'" + param + "." + key + "' must be a list of text parts");
    for (const ordered_json& part : item[key]) text += string_field(part, "text", param + "." + key);
    if (!text.empty()) break;
  }
  return text;
}

ordered_json chat_messages_of_input(const ordered_json& body) {
  ordered_json messages = ordered_json::array();
  if (given(body, "instructions")) {
    if (!body["instructions"].is_string()) bad("instructions", "'instructions' must be a string");
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!given(body, "input")) bad("input", "'input' is missing");
  const ordered_json& input = body["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array() || input.empty()) bad("input", "'input' must be a string or a non-empty list of items");
  std::string reasoning;           // of a reasoning item, for the assistant message after it
  std::set<std::string> call_ids;  // of the function_call items so far: what an output may answer
  auto assistant_message = [&](ordered_json content) {
    ordered_json m = {{"role", "assistant"}, {"content", std::move(content)}};
    if (!reasoning.empty()) m["reasoning_content"] = std::move(reasoning);
    reasoning.clear();
    return m;
  };
  for (size_t k = 0; k < input.size(); ++k) {
    const ordered_json& item = input[k];
    const std::string param = "input[" + std::to_string(k) + "]";
    if (!item.is_object()) bad(param, "'" + param + "' must be an object");
    if (given(item, "type") && !item["type"].is_string()) bad(param + ".type", "'" + param + ".type' must be a string");
    const std::string type = given(item, "type") ? item["type"].get<std::string>() : "message";
    if (type == "message") {
      const std::string& role = string_field(item, "role", param);
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        bad(param + ".role", "'" + param + ".role' is '" + input_excerpt(role) +
                                 "'; expected one of user, assistant, system, developer");
      if (!item.contains("content")) bad(param + ".content", "'" + param + ".content' is missing");
      ordered_json content = text_content(item["content"], param + ".content");
      if (role != "assistant") reasoning.clear();  // a reasoning item without its reply: of no later turn (a hunt)
      messages.push_back(role == "assistant" ? assistant_message(std::move(content))
                                             : ordered_json{{"role", role}, {"content", std::move(content)}});
    } else if (type == "function_call") {
      const ordered_json call = {
          {"id", string_field(item, "call_id", param)},
          {"type", "function"},
          {"function",
           {{"name", string_field(item, "name", param)}, {"arguments", string_field(item, "arguments", param)}}}};
      // Calls after an assistant message (or after each other) are that message's.
      if (messages.empty() || messages.back()["role"] != "assistant" || !reasoning.empty())
        messages.push_back(assistant_message(""));
      messages.back()["tool_calls"].push_back(call);
      call_ids.insert(call["id"].get<std::string>());
    } else if (type == "function_call_output") {
      if (!item.contains("output")) bad(param + ".output", "'" + param + ".output' is missing");
      // As OpenAI's: the output of a call the conversation does not hold answers nothing the model asked.
      const std::string& call_id = string_field(item, "call_id", param);
      if (!call_ids.count(call_id))
        bad(param + ".call_id",
            "No tool call found for function call output with call_id " + input_excerpt(call_id) + ".");
      reasoning.clear();
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", call_id}, {"content", text_content(item["output"], param + ".output")}});
    } else if (type == "reasoning") {
      reasoning += reasoning_text(item, param);
    } else {
      bad(param + ".type", "input items of type '" + input_excerpt(type) +
                               "' are not supported (message, function_call, function_call_output, reasoning are)");
    }
  }
  return messages;
}

ordered_json chat_tools(const ordered_json& tools) {
  if (!tools.is_array()) bad("tools", "'tools' must be a list");
  ordered_json out = ordered_json::array();
  for (size_t k = 0; k < tools.size(); ++k) {
    const ordered_json& t = tools[k];
    const std::string param = "tools[" + std::to_string(k) + "]";
    if (!t.is_object() || t.value("type", "") != "function")
      bad(param, "'" + param + "': only function tools are supported (built-in tools need OpenAI's servers)");
    ordered_json function = {{"name", string_field(t, "name", param)}};
    for (const char* key : {"description", "parameters", "strict"})
      if (given(t, key)) function[key] = t[key];
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

ordered_json chat_tool_choice(const ordered_json& choice) {
  if (choice.is_string()) return choice;  // auto, none, required: the chat endpoint checks them
  if (choice.is_object() && choice.value("type", "") == "function")
    return {{"type", "function"}, {"function", {{"name", string_field(choice, "name", "tool_choice")}}}};
  bad("tool_choice", "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}");
}

ordered_json chat_response_format(const ordered_json& text) {
  if (!text.is_object()) bad("text", "'text' must be an object");
  for (const auto& item : text.items())
    if (item.key() != "format" && item.key() != "verbosity")
      bad("text." + item.key(), "Unrecognized request argument supplied: text." + input_excerpt(item.key()));
  if (!given(text, "format")) return nullptr;
  const ordered_json& format = text["format"];
  const std::string type = format.is_object() ? format.value("type", "") : "";
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema") bad("text.format", "'text.format.type' must be text, json_object or json_schema");
  ordered_json schema = ordered_json::object();
  for (const auto& item : format.items())
    if (item.key() != "type") schema[item.key()] = item.value();
  return {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

std::string sse_event(const ordered_json& e) {
  return "event: " + e["type"].get<std::string>() +
         "\ndata: " + e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

ordered_json envelope(const ResponseContext& c, const std::string& status, ordered_json output,
                      const ordered_json& usage, const ordered_json& error = nullptr) {
  const ordered_json& r = c.request;
  auto echo = [&](const char* key, ordered_json fallback) { return given(r, key) ? r[key] : fallback; };
  ordered_json reasoning = {{"effort", nullptr}, {"summary", nullptr}};
  if (given(r, "reasoning") && given(r["reasoning"], "effort")) reasoning["effort"] = r["reasoning"]["effort"];
  return {{"id", c.id},
          {"object", "response"},
          {"created_at", c.created_at},
          {"status", status},
          {"error", error},
          {"incomplete_details", status == "incomplete" ? ordered_json{{"reason", "max_output_tokens"}} : nullptr},
          {"instructions", echo("instructions", nullptr)},
          {"max_output_tokens", echo("max_output_tokens", nullptr)},
          {"model", c.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", echo("parallel_tool_calls", true)},
          {"previous_response_id", nullptr},
          {"reasoning", reasoning},
          {"store", false},
          {"temperature", c.temperature},
          {"text", echo("text", {{"format", {{"type", "text"}}}})},
          {"tool_choice", echo("tool_choice", "auto")},
          {"tools", echo("tools", ordered_json::array())},
          {"top_logprobs", echo("top_logprobs", nullptr)},
          {"top_p", c.top_p},
          {"truncation", echo("truncation", "disabled")},
          {"usage", usage},
          {"user", echo("user", nullptr)},
          {"metadata", echo("metadata", ordered_json::object())}};
}

// Item ids share the response's random part: resp_X -> rs_X, fc_X_k, and
// msg_X for the first message (msg_X_k for the k-th after it: text after a
// tool call).
std::string item_id(const ResponseContext& c, const char* prefix) { return prefix + c.id.substr(c.id.find('_') + 1); }

ordered_json reasoning_item(const ResponseContext& c, const std::string& text) {
  return {{"id", item_id(c, "rs_")},
          {"type", "reasoning"},
          {"summary", ordered_json::array()},
          {"content", ordered_json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

ordered_json message_item(const ResponseContext& c, size_t k, const std::string& text, const std::string& status) {
  ordered_json part = {{"type", "output_text"}, {"text", text}, {"annotations", ordered_json::array()}};
  if (c.logprobs) part["logprobs"] = ordered_json::array();
  return {{"id", item_id(c, "msg_") + (k > 0 ? "_" + std::to_string(k) : "")},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", ordered_json::array({std::move(part)})}};
}

// The answer's tokens' log-probabilities (chat's {token, logprob, bytes,
// top_logprobs}, this API's form too), each given to the message that holds
// the text it came out with ("content_at", CompletionRun's).
void give_logprobs(ordered_json& output, const std::vector<std::pair<size_t, size_t>>& message_ends,
                   const ordered_json& logprobs) {
  if (!logprobs.is_array()) return;
  for (ordered_json token : logprobs) {
    const size_t at = token["content_at"];
    token.erase("content_at");
    const auto m = std::find_if(message_ends.begin(), message_ends.end(), [&](const auto& e) { return at < e.second; });
    if (m != message_ends.end()) output[m->first]["content"][0]["logprobs"].push_back(std::move(token));
  }
}

ordered_json function_call_item(const ResponseContext& c, size_t k, const ordered_json& call,
                                const std::string& status) {
  return {{"id", item_id(c, "fc_") + "_" + std::to_string(k)},
          {"type", "function_call"},
          {"status", status},
          {"arguments", status == "completed" ? call["function"]["arguments"] : ordered_json("")},
          {"call_id", call["id"]},
          {"name", call["function"]["name"]}};
}

ordered_json usage_of(const ordered_json& chat_usage) {
  const int64_t input = chat_usage["prompt_tokens"], output = chat_usage["completion_tokens"];
  return {
      {"input_tokens", input},
      {"input_tokens_details", {{"cached_tokens", chat_usage["prompt_tokens_details"]["cached_tokens"]}}},
      {"output_tokens", output},
      {"output_tokens_details", {{"reasoning_tokens", chat_usage["completion_tokens_details"]["reasoning_tokens"]}}},
      {"total_tokens", input + output}};
}

const std::set<std::string_view> kPassed = {"model",
                                            "stream",
                                            "temperature",
                                            "top_p",
                                            "parallel_tool_calls",
                                            "user",
                                            "store",
                                            "service_tier",
                                            "safety_identifier",
                                            "prompt_cache_key",
                                            "prompt_cache_retention",
                                            "chat_template_kwargs",  // vLLM's, as on chat
                                            "request_id"};
const std::set<std::string_view> kTranslated = {
    "input",    "instructions",      "tools",   "tool_choice",    "text",        "reasoning", "truncation",
    "metadata", "max_output_tokens", "include", "stream_options", "top_logprobs"};
// What needs the state of earlier requests, or a server of OpenAI's.
const std::set<std::string_view> kStateful = {"previous_response_id", "conversation", "background", "prompt"};
const std::set<std::string_view> kUnsupported = {"max_tool_calls"};
constexpr std::string_view kLogprobs = "message.output_text.logprobs";

// This API's name for a chat field it names otherwise (nullptr: none): not
// its field, and refused with the hint even where unknown fields are
// dropped, since dropping it would drop what the client asked for.
const char* responses_name(const std::string& key) {
  if (key == "max_tokens" || key == "max_completion_tokens") return "max_output_tokens";
  if (key == "response_format") return "text.format";
  if (key == "messages") return "input";
  return nullptr;
}

bool passed_to_chat(const std::string& key) {
  return kPassed.count(key) || (is_generation_field(key) && !responses_name(key));
}

// What a stateless client asks to have included: the reasoning to give back
// (every reasoning item carries its whole text already, which this server
// takes back as input), and the answer's log-probabilities; the rest needs
// built-in tools or images. Returns whether the log-probabilities are asked for.
bool check_include(const ordered_json& include) {
  if (!include.is_array()) bad("include", "'include' must be a list");
  bool logprobs = false;
  for (size_t k = 0; k < include.size(); ++k) {
    if (include[k] == kLogprobs)
      logprobs = true;
    else if (include[k] != "reasoning.encrypted_content")
      bad("include[" + std::to_string(k) + "]",
          "'include' value " + input_excerpt(include[k].dump()) +
              " is not supported by this server (only \"message.output_text.logprobs\", and "
              "\"reasoning.encrypted_content\", which its reasoning items satisfy with their text)");
  }
  return logprobs;
}

// The Responses stream's only option: obfuscation, which an unencrypted
// local stream has no use for (taken, and nothing added).
void check_stream_options(const ordered_json& options) {
  if (!options.is_object()) bad("stream_options", "'stream_options' must be an object");
  for (const auto& item : options.items())
    if (item.key() != "include_obfuscation" || !item.value().is_boolean())
      bad("stream_options." + input_excerpt(item.key()),
          item.key() == "include_obfuscation"
              ? std::string("'stream_options.include_obfuscation' must be true or false")
              : "Unrecognized request argument supplied: stream_options." + input_excerpt(item.key()));
}

}  // namespace

std::vector<std::string> unknown_response_fields(const ordered_json& body) {
  std::vector<std::string> unknown;
  for (const auto& item : body.items())
    if (!passed_to_chat(item.key()) && !kStateful.count(item.key()) && !kUnsupported.count(item.key()) &&
        !kTranslated.count(item.key()) && !responses_name(item.key()))
      unknown.push_back(item.key());
  return unknown;
}

ordered_json chat_body_of_response_request(const ordered_json& body) {
  ordered_json chat = ordered_json::object();
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    const ordered_json& v = item.value();
    const bool asks_nothing = v.is_null() || v == false || v == 0 || (v.is_array() && v.empty());
    if (passed_to_chat(key)) {
      chat[key] = v;
    } else if (kStateful.count(key) || kUnsupported.count(key)) {
      if (!asks_nothing)
        bad(key, "'" + key + "' is not supported by this server" +
                     (kStateful.count(key) ? " (it keeps no responses or conversations: send the whole input each time)"
                                           : ""));
    } else if (!kTranslated.count(key)) {
      bad(input_excerpt(key),
          "Unrecognized request argument supplied: " + input_excerpt(key) +
              (responses_name(key) ? std::string(" (this API's is ") + responses_name(key) + ")" : std::string()));
    }
  }
  // OpenAI's limits, which vLLM checks too (a hunt finding: any value was taken, and echoed as given).
  if (given(body, "metadata")) {
    const ordered_json& metadata = body["metadata"];
    if (!metadata.is_object() || metadata.size() > 16)
      bad("metadata", "'metadata' must be an object of at most 16 strings");
    for (const auto& item : metadata.items())
      if (utf8::code_points(item.key()) > 64 || !item.value().is_string() ||
          utf8::code_points(item.value().get_ref<const std::string&>()) > 512)
        bad("metadata", "'metadata' keys are at most 64 characters and its values strings of at most 512");
  }
  if (given(body, "user") && !body["user"].is_string()) bad("user", "'user' must be a string");
  chat["messages"] = chat_messages_of_input(body);
  if (given(body, "tools")) chat["tools"] = chat_tools(body["tools"]);
  if (given(body, "tool_choice")) chat["tool_choice"] = chat_tool_choice(body["tool_choice"]);
  if (given(body, "text")) {
    if (ordered_json format = chat_response_format(body["text"]); !format.is_null()) chat["response_format"] = format;
    if (given(body["text"], "verbosity")) chat["verbosity"] = body["text"]["verbosity"];
  }
  if (given(body, "reasoning")) {
    const ordered_json& r = body["reasoning"];
    if (!r.is_object()) bad("reasoning", "'reasoning' must be an object");
    for (const auto& item : r.items())
      if (item.key() != "effort" && item.key() != "summary" && item.key() != "generate_summary")
        bad("reasoning." + item.key(),
            "Unrecognized request argument supplied: reasoning." + input_excerpt(item.key()));
    if (given(r, "effort")) chat["reasoning_effort"] = r["effort"];
  }
  // As vLLM: the answer's log-probabilities when `include` asks for them, with top_logprobs alternatives each.
  // A whole number written as a float passes, as chat's fields take it.
  if (given(body, "top_logprobs")) {
    const ordered_json& top = body["top_logprobs"];
    if (!top.is_number() || top.get<double>() != std::floor(top.get<double>()) || top < 0 || top > 20)
      bad("top_logprobs", "'top_logprobs' must be an integer from 0 to 20");
  }
  if (given(body, "include") && check_include(body["include"])) {
    chat["logprobs"] = true;
    chat["top_logprobs"] = given(body, "top_logprobs") ? body["top_logprobs"] : ordered_json(0);
  }
  if (given(body, "stream_options")) check_stream_options(body["stream_options"]);
  if (given(body, "truncation") && body["truncation"] != "disabled" && body["truncation"] != "auto")
    bad("truncation", "'truncation' must be \"auto\" or \"disabled\"");
  if (given(body, "max_output_tokens")) chat["max_completion_tokens"] = body["max_output_tokens"];
  if (chat.contains("stream") && chat["stream"] == true) chat["stream_options"] = {{"include_usage", true}};
  return chat;
}

bool drops_input_to_fit(const ordered_json& body) { return given(body, "truncation") && body["truncation"] == "auto"; }

ApiError as_response_request_error(const ApiError& e) {
  // The chat field, and this API's name for it (messages: input, ...).
  static const std::pair<const char*, const char*> kNames[] = {{"messages", "input"},
                                                               {"max_completion_tokens", "max_output_tokens"},
                                                               {"response_format.json_schema", "text.format"},
                                                               {"response_format", "text.format"},
                                                               {"reasoning_effort", "reasoning.effort"},
                                                               {"verbosity", "text.verbosity"}};
  std::string message = e.what(), param = e.param;
  bool renamed = false;
  for (const auto& [chat, responses] : kNames) {
    const std::string_view name(chat);
    if (!renamed && param.rfind(name, 0) == 0) {
      param = responses + param.substr(name.size());
      renamed = true;
    }
    for (const std::string before : {"'", "your "})
      for (size_t at = 0; (at = message.find(before + chat, at)) != std::string::npos; at += before.size())
        message.replace(at + before.size(), name.size(), responses);
    if (message.rfind(std::string(chat) + ": ", 0) == 0) message.replace(0, name.size(), responses);  // "field: why"
  }
  return ApiError(e.status, message, param, e.type);
}

ApiError response_error_of(const ordered_json& answer) {
  const ordered_json& e = answer["error"];
  return as_response_request_error(ApiError(e["code"].get<int>(), e["message"].get<std::string>(),
                                            e["param"].is_string() ? e["param"].get<std::string>() : "",
                                            e["type"].get<std::string>()));
}

ordered_json failed_response(const ResponseContext& context, const ApiError& error, ordered_json output) {
  // ResponseError's codes: a request the model cannot go on with, or the server's failure.
  const char* code = error.status >= 500 ? "server_error" : "invalid_prompt";
  return envelope(context, "failed", std::move(output), nullptr, {{"code", code}, {"message", error.what()}});
}

ordered_json response_of_chat_answer(const ResponseContext& c, const ordered_json& answer) {
  const ordered_json& choice = answer["choices"].at(0);
  const ordered_json& message = choice["message"];
  const bool incomplete = choice["finish_reason"] == "length";
  ordered_json output = ordered_json::array();
  if (given(message, "reasoning_content")) output.push_back(reasoning_item(c, message["reasoning_content"]));
  // The content around the calls, as the stream's message items (ResponseEvents).
  const std::string content = message["content"].is_string() ? message["content"].get<std::string>() : "";
  size_t at = 0, messages = 0;
  std::vector<std::pair<size_t, size_t>> message_ends;  // each message's place in the output, its end in the content
  auto text_until = [&](size_t end, const char* status) {
    if (end > at) {
      message_ends.emplace_back(output.size(), end);
      output.push_back(message_item(c, messages++, content.substr(at, end - at), status));
    }
    at = end;
  };
  if (given(message, "tool_calls"))
    for (size_t k = 0; k < message["tool_calls"].size(); ++k) {
      const ordered_json& call = message["tool_calls"][k];
      text_until(std::min(call["content_before"].get<size_t>(), content.size()), "completed");
      output.push_back(function_call_item(c, k, call, "completed"));
    }
  text_until(content.size(), incomplete ? "incomplete" : "completed");
  if (c.logprobs && given(choice, "logprobs")) give_logprobs(output, message_ends, choice["logprobs"]["content"]);
  // A call the reply was cut in (or after, with nothing between) is incomplete, as in the stream.
  if (incomplete && !output.empty() && output.back()["type"] == "function_call") output.back()["status"] = "incomplete";
  return envelope(c, incomplete ? "incomplete" : "completed", std::move(output), usage_of(answer["usage"]));
}

std::string ResponseEvents::event(ordered_json e) {
  e["sequence_number"] = sequence_++;
  return sse_event(e);
}

std::string ResponseEvents::open(Open kind) {
  if (open_ == kind) return "";
  std::string out = close_open_item();
  open_ = kind;
  ordered_json item =
      kind == Open::Reasoning ? reasoning_item(context_, "") : message_item(context_, messages_++, "", "in_progress");
  ordered_json part = item["content"][0];
  item["content"] = ordered_json::array();
  const auto index = static_cast<int64_t>(output_.size());
  out += event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
  out += event({{"type", "response.content_part.added"},
                {"item_id", item["id"]},
                {"output_index", index},
                {"content_index", 0},
                {"part", part}});
  item["content"].push_back(std::move(part));
  output_.push_back(std::move(item));
  return out;
}

std::string ResponseEvents::arguments_delta(const std::string& arguments) {
  if (arguments.empty()) return "";
  ordered_json& item = open_item();
  item["arguments"] = item["arguments"].get<std::string>() + arguments;
  return event({{"type", "response.function_call_arguments.delta"},
                {"item_id", item["id"]},
                {"output_index", static_cast<int64_t>(output_.size() - 1)},
                {"delta", arguments}});
}

// Those of the tokens whose text ends before `end` in the content.
void ResponseEvents::take_pending_logprobs(size_t end, ordered_json& into) {
  ordered_json later = ordered_json::array();
  for (ordered_json& token : pending_logprobs_) {
    if (token["content_at"].get<size_t>() >= end) {
      later.push_back(std::move(token));
      continue;
    }
    token.erase("content_at");
    into.push_back(std::move(token));
  }
  pending_logprobs_ = std::move(later);
}

std::string ResponseEvents::close_open_item() {
  if (open_ == Open::None) return "";
  const bool reasoning = open_ == Open::Reasoning, call = open_ == Open::FunctionCall;
  open_ = Open::None;
  ordered_json& item = open_item();
  const auto index = static_cast<int64_t>(output_.size() - 1);
  const bool cut_short = finish_reason_ == "length" || finish_reason_ == "error";
  if (call) {
    item["status"] = cut_short ? "incomplete" : "completed";
    std::string out = event({{"type", "response.function_call_arguments.done"},
                             {"item_id", item["id"]},
                             {"output_index", index},
                             {"name", item["name"]},
                             {"arguments", item["arguments"]}});
    return out + event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  }
  const ordered_json& part = item["content"][0];
  ordered_json done = {{"type", reasoning ? "response.reasoning_text.done" : "response.output_text.done"},
                       {"item_id", item["id"]},
                       {"output_index", index},
                       {"content_index", 0},
                       {"text", part["text"]}};
  if (!reasoning) {
    done["logprobs"] = context_.logprobs ? item["content"][0]["logprobs"] : ordered_json::array();
    item["status"] = cut_short ? "incomplete" : "completed";
  }
  std::string out = event(std::move(done));
  out += event({{"type", "response.content_part.done"},
                {"item_id", item["id"]},
                {"output_index", index},
                {"content_index", 0},
                {"part", part}});
  out += event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  return out;
}

std::string ResponseEvents::on(const ordered_json& chunk) {
  std::string out;
  if (!started_) {
    started_ = true;
    const ordered_json response = envelope(context_, "in_progress", ordered_json::array(), nullptr);
    out += event({{"type", "response.created"}, {"response", response}});
    out += event({{"type", "response.in_progress"}, {"response", response}});
  }
  if (chunk.contains("error")) {  // the engine failed the answer after it began
    const ApiError error = response_error_of(chunk);
    const ordered_json param = error.param.empty() ? ordered_json() : ordered_json(error.param);
    finish_reason_ = "error";
    out += close_open_item();
    out += event({{"type", "error"}, {"code", error.type}, {"message", error.what()}, {"param", param}});
    out += event({{"type", "response.failed"}, {"response", failed_response(context_, error, output_)}});
    return out;
  }
  for (const ordered_json& choice : chunk["choices"]) {
    const ordered_json& delta = choice["delta"];
    if (context_.logprobs && given(choice, "logprobs") && choice["logprobs"]["content"].is_array())
      for (const ordered_json& token : choice["logprobs"]["content"]) pending_logprobs_.push_back(token);
    auto text_delta = [&](Open kind, const std::string& text) {
      if (text.empty()) return;
      out += open(kind);
      ordered_json& part = open_item()["content"][0];
      part["text"] = part["text"].get<std::string>() + text;
      ordered_json e = {
          {"type", kind == Open::Reasoning ? "response.reasoning_text.delta" : "response.output_text.delta"},
          {"item_id", open_item()["id"]},
          {"output_index", static_cast<int64_t>(output_.size() - 1)},
          {"content_index", 0},
          {"delta", text}};
      if (kind == Open::Message) {
        content_sent_ += text.size();
        e["logprobs"] = ordered_json::array();
        if (context_.logprobs) {  // the tokens this text came out with
          take_pending_logprobs(content_sent_, e["logprobs"]);
          for (const ordered_json& token : e["logprobs"]) part["logprobs"].push_back(token);
        }
      }
      out += event(std::move(e));
    };
    text_delta(Open::Reasoning, delta.value("reasoning_content", ""));
    // The content and the calls in the order they were made: a delta may
    // hold text on both sides of a call. A call stays open while more of
    // its arguments may come.
    const std::string content = delta.value("content", "");
    size_t at = 0;
    if (delta.contains("tool_calls")) {
      for (const ordered_json& call : delta["tool_calls"]) {
        const std::string arguments = call["function"].value("arguments", "");
        if (!call.contains("id")) {  // more of the open call's arguments
          if (open_ == Open::FunctionCall) out += arguments_delta(arguments);
          continue;
        }
        const size_t before = std::min(call["content_before"].get<size_t>(), content.size());
        if (before > at) text_delta(Open::Message, content.substr(at, before - at));
        at = std::max(at, before);
        out += close_open_item();
        const auto index = static_cast<int64_t>(output_.size());
        output_.push_back(function_call_item(context_, call["index"].get<size_t>(), call, "in_progress"));
        open_ = Open::FunctionCall;
        out += event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", open_item()}});
        out += arguments_delta(arguments);
      }
    }
    text_delta(Open::Message, content.substr(at));
    if (choice.contains("finish_reason") && !choice["finish_reason"].is_null()) {
      finish_reason_ = choice["finish_reason"];
      out += close_open_item();
    }
  }
  if (given(chunk, "usage")) {  // the last chunk
    out += close_open_item();
    const std::string status = finish_reason_ == "length" ? "incomplete" : "completed";
    out += event(
        {{"type", "response." + status}, {"response", envelope(context_, status, output_, usage_of(chunk["usage"]))}});
  }
  return out;
}

}  // namespace qinfer::server
