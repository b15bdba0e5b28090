// The grammar a chat reply must follow, from OpenAI's request fields:
// response_format {"type": "json_object"} (any JSON object) or {"type":
// "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
// (a document of that schema), or tool_choice "required" / {"type":
// "function", "function": {"name"}} (the reply is Qwen3's tool calls,
// <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, whose arguments
// follow the function's parameters schema; several only with
// parallel_tool_calls), as vLLM constrains them; or vLLM's own
// structured_outputs {"json" | "regex" | "choice" | "grammar" |
// "json_object"} (a schema's document, a whole match of a regex, exactly one
// of the strings, a match of a GBNF grammar), also as the guided_json,
// guided_regex, guided_choice and guided_grammar fields of vLLM before 0.12,
// or llama-server's grammar (GBNF) and json_schema. At most one of them.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "runtime/grammar_constraint.h"
#include "runtime/model_bundle.h"

namespace qinfer::server {

// The fields of vLLM's structured outputs (`structured_outputs` and the
// guided_ fields it replaced) and llama-server's (grammar, json_schema).
bool is_structured_output_field(std::string_view key);

// Null when the reply is free (no response_format or "text", tool_choice
// absent, "auto" or "none"). ApiError 400 naming the field (and the schema
// keyword at fault) for a form, tool or schema it cannot follow.
std::shared_ptr<const OutputGrammar> parse_reply_grammar(const nlohmann::ordered_json& body, const ModelBundle& bundle,
                                                         ReasoningBlock reasoning);

}  // namespace qinfer::server
