// OpenAI's Responses API (POST /v1/responses) on the chat endpoint's
// machinery: a request becomes the chat completion request that asks the
// same (input items as messages, instructions as the system message,
// function tools, text.format as response_format, reasoning.effort,
// max_output_tokens, truncation), and the chat answer becomes a Response object: whole,
// or its stream of chunks as the typed events of a Response being made.
// Stateless, as a server without a store is: previous_response_id,
// conversations and built-in tools are refused by name.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace qinfer::server {

// The chat completion body equivalent to a Responses request body; ApiError
// 400 naming the Responses field at fault. A stream asks for its usage (the
// last event carries it).
nlohmann::ordered_json chat_body_of_response_request(const nlohmann::ordered_json& body);
// The fields of a Responses request body this API does not know (what
// chat_body_of_response_request refuses as unrecognized, but for the chat
// names of its own fields: max_tokens, response_format, ...), in body order.
std::vector<std::string> unknown_response_fields(const nlohmann::ordered_json& body);
// Whether the request asks for truncation "auto": a conversation too long for
// the context loses input items from its middle (parse_chat_request_fitting).
bool drops_input_to_fit(const nlohmann::ordered_json& body);
// A chat request's error as the Responses request's: its fields by this
// API's names (messages: input, response_format: text.format, ...).
ApiError as_response_request_error(const ApiError& e);

// What a Response object says besides its output: its id and time, and the
// request's settings as they took effect.
struct ResponseContext {
  std::string id;  // resp_...
  int64_t created_at = 0;
  std::string model;
  nlohmann::ordered_json request;  // the Responses request body
  double temperature = 1, top_p = 1;
  bool logprobs = false;  // include: message.output_text.logprobs
};

// The Response object of a whole chat answer (a "chat.completion" object).
nlohmann::ordered_json response_of_chat_answer(const ResponseContext& context, const nlohmann::ordered_json& answer);
// A chat answer's error object ({"error": {...}}) as the Responses request's.
ApiError response_error_of(const nlohmann::ordered_json& answer);
// A Response with status "failed" for an error found once the answer had
// begun (its 200 sent), with the output items made before it.
nlohmann::ordered_json failed_response(const ResponseContext& context, const ApiError& error,
                                       nlohmann::ordered_json output = nlohmann::ordered_json::array());

// A stream's chat chunks (and the error object that may end it) as
// Responses events: response.created, output items opened, their text
// deltas, closed, then response.completed (or .incomplete, .failed).
class ResponseEvents {
 public:
  explicit ResponseEvents(ResponseContext context) : context_(std::move(context)) {}
  // The SSE text ("event: TYPE\ndata: {...}\n\n" each) of the events the
  // chunk makes; "" when none.
  std::string on(const nlohmann::ordered_json& chunk);

 private:
  enum class Open { None, Reasoning, Message, FunctionCall };
  std::string event(nlohmann::ordered_json e);
  std::string open(Open kind);
  std::string close_open_item();
  std::string arguments_delta(const std::string& arguments);
  void take_pending_logprobs(size_t end, nlohmann::ordered_json& into);
  nlohmann::ordered_json& open_item() { return output_.back(); }

  ResponseContext context_;
  int64_t sequence_ = 0;
  bool started_ = false;
  Open open_ = Open::None;
  size_t messages_ = 0;  // message items opened
  std::string finish_reason_;
  // Of the answer's tokens, not yet given to a message (their text to come).
  nlohmann::ordered_json pending_logprobs_ = nlohmann::ordered_json::array();
  size_t content_sent_ = 0;                                          // bytes of the answer's text sent
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // the items so far, as they end
};

}  // namespace qinfer::server
