// Qwen3-Coder's tool calls. Where Qwen3 writes a JSON object inside
// <tool_call>, Qwen3-Coder's chat template teaches XML:
//   <function=NAME>
//   <parameter=KEY>
//   VALUE (any text, lines included)
//   </parameter>
//   </function>
// Values are text, so each becomes the JSON its parameter's schema type
// names (its "type", or the first but "null" of an "anyOf"), as vLLM's
// qwen3_coder tool parser converts them: a parameter the tool does not
// declare, or of a string type, stays a string ("null" too, unless the
// schema admits null); otherwise "null" or "None" (any case) is null; integer
// types an integer, number types a number (an integer when whole), boolean
// types true when the text is "true" (any case) and false otherwise, any
// other type parsed as JSON. Text that does not convert stays a string.
#pragma once
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "server/chat_output.h"
#include "text/jinja/chat_template.h"

namespace qinfer::server {

// The {name, parameters} object of the function named `name` among the
// request's tools, or nullptr where none is.
const nlohmann::ordered_json* offered_function(const nlohmann::ordered_json& tools, std::string_view name);

// Whether the template (as rendered with tools) teaches the XML form.
bool teaches_xml_tool_calls(const ChatTemplate& chat_template);

// The calls in a <tool_call> body (the text between the tags): one per
// <function=NAME>...</function>, as vLLM reads them; none when the body holds
// anything else but whitespace around them (that text stays visible), or a
// NAME with spaces, quotes, braces or angle brackets. `tools` is the
// request's list of {"type": "function", "function": {name, parameters}}.
// A closing tag ends its element only where whitespace and the next element
// (or the end) follow it, so code in a value may mention </parameter> or
// </function>; an element left open ends at the next one or the end. One
// newline is taken off each end of a value.
std::vector<ToolCall> parse_xml_tool_calls(std::string_view body, const nlohmann::ordered_json& tools);

}  // namespace qinfer::server
