#include "server/response_format.h"

#include "server/api_error.h"
#include "text/grammar/json_grammar.h"

namespace qinfer::server {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& message) { throw ApiError(400, message, "response_format"); }

std::shared_ptr<const grammar::Grammar> json_schema(const ordered_json& spec) {
  if (!spec.is_object()) bad("'response_format.json_schema' must be an object");
  for (const auto& item : spec.items())
    if (item.key() != "name" && item.key() != "schema" && item.key() != "strict" && item.key() != "description")
      bad("Unrecognized argument supplied: response_format.json_schema." + input_excerpt(item.key()));
  if (!spec.contains("name") || !spec["name"].is_string()) bad("'response_format.json_schema.name' must be a string");
  if (spec.contains("strict") && !spec["strict"].is_boolean() && !spec["strict"].is_null())
    bad("'response_format.json_schema.strict' must be true or false");
  // Without a schema, any JSON document.
  const ordered_json schema = spec.contains("schema") ? spec["schema"] : ordered_json::object();
  try {
    return std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(schema));
  } catch (const Error& e) {
    bad(std::string("response_format: ") + e.what());
  }
}

}  // namespace

std::shared_ptr<const OutputGrammar> parse_response_format(const ordered_json& format, const ModelBundle& bundle,
                                                           bool starts_in_reasoning) {
  if (format.is_null()) return nullptr;
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    bad("'response_format' must be an object with a 'type': \"text\", \"json_object\" or \"json_schema\"");
  const std::string type = format["type"].get<std::string>();
  for (const auto& item : format.items())
    if (item.key() != "type" && !(type == "json_schema" && item.key() == "json_schema"))
      bad("Unrecognized argument supplied: response_format." + input_excerpt(item.key()));
  auto out = std::make_shared<OutputGrammar>();
  if (type == "text") {
    return nullptr;
  } else if (type == "json_object") {
    static const auto object = std::make_shared<const grammar::Grammar>(grammar::json_object_grammar());
    out->grammar = object;
  } else if (type == "json_schema") {
    if (!format.contains("json_schema")) bad("'response_format.json_schema' is missing");
    out->grammar = json_schema(format["json_schema"]);
  } else {
    bad("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got " +
        input_excerpt(format["type"].dump()));
  }
  const Tokenizer& tokenizer = bundle.require_tokenizer();
  out->tokenizer = &tokenizer;
  out->vocabulary = bundle.token_trie();
  out->think_open = tokenizer.token_to_id("<think>").value_or(-1);
  out->think_close = tokenizer.token_to_id("</think>").value_or(-1);
  out->starts_in_reasoning = starts_in_reasoning;
  return out;
}

}  // namespace qinfer::server
