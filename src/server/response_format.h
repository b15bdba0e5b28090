// OpenAI's response_format on the chat endpoint: {"type": "text"} (free),
// {"type": "json_object"} (JSON mode: any JSON object) or {"type":
// "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
// (a document of that schema), as the grammar the reply must follow.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>

#include "runtime/grammar_constraint.h"
#include "runtime/model_bundle.h"

namespace qinfer::server {

// Null for "text". ApiError 400 naming response_format (and the schema
// keyword at fault) for a form or schema it cannot follow.
std::shared_ptr<const OutputGrammar> parse_response_format(const nlohmann::ordered_json& format,
                                                           const ModelBundle& bundle, bool starts_in_reasoning);

}  // namespace qinfer::server
