#include "server/reply_grammar.h"

#include <functional>
#include <set>
#include <string_view>
#include <utility>

#include "server/api_error.h"
#include "server/json_shape.h"
#include "text/grammar/gbnf.h"
#include "text/grammar/json_grammar.h"
#include "text/grammar/regex.h"

namespace qinfer::server {
namespace {

using nlohmann::ordered_json;

std::shared_ptr<const grammar::Grammar> compile(const char* param, const std::function<grammar::Grammar()>& build) {
  try {
    return std::make_shared<const grammar::Grammar>(build());
  } catch (const Error& e) {
    const std::string what = e.what(), prefix = std::string(param) + ": ";
    bad(param, what.rfind(prefix, 0) == 0 ? what : prefix + what);  // "grammar: grammar: ..." once
  }
}

std::shared_ptr<const grammar::Grammar> json_schema(const ordered_json& spec) {
  if (!spec.is_object()) bad("response_format", "'response_format.json_schema' must be an object");
  for (const auto& item : spec.items())
    if (item.key() != "name" && item.key() != "schema" && item.key() != "strict" && item.key() != "description")
      bad("response_format",
          "Unrecognized argument supplied: response_format.json_schema." + input_excerpt(item.key()));
  if (!spec.contains("name") || !spec["name"].is_string())
    bad("response_format", "'response_format.json_schema.name' must be a string");
  if (spec.contains("strict") && !spec["strict"].is_boolean() && !spec["strict"].is_null())
    bad("response_format", "'response_format.json_schema.strict' must be true or false");
  // Without a schema, any JSON document.
  const ordered_json schema = spec.contains("schema") ? spec["schema"] : ordered_json::object();
  return compile("response_format", [&] { return grammar::json_schema_grammar(schema); });
}

std::shared_ptr<const grammar::Grammar> response_format(const ordered_json& format) {
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    bad("response_format",
        "'response_format' must be an object with a 'type': \"text\", \"json_object\" or \"json_schema\"");
  const std::string type = format["type"].get<std::string>();
  for (const auto& item : format.items())
    if (item.key() != "type" && !(type == "json_schema" && item.key() == "json_schema"))
      bad("response_format", "Unrecognized argument supplied: response_format." + input_excerpt(item.key()));
  if (type == "text") return nullptr;
  if (type == "json_object") {
    static const auto object = std::make_shared<const grammar::Grammar>(grammar::json_object_grammar());
    return object;
  }
  if (type == "json_schema") {
    if (!format.contains("json_schema")) bad("response_format", "'response_format.json_schema' is missing");
    return json_schema(format["json_schema"]);
  }
  bad("response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got " +
                             input_excerpt(format["type"].dump()));
}

// tool_choice "required" or a named function: one tool call (or, with
// parallel_tool_calls, one or more) of the tools offered, each
// {"name": its name, "arguments": what its parameters schema allows}.
std::shared_ptr<const grammar::Grammar> tool_choice(const ordered_json& body) {
  const ordered_json& choice = body["tool_choice"];
  std::string named;
  if (choice.is_object()) {
    if (choice.value("type", ordered_json()) != "function" || !choice.contains("function") ||
        !choice["function"].is_object() || !choice["function"].contains("name") ||
        !choice["function"]["name"].is_string())
      bad("tool_choice",
          "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}");
    named = choice["function"]["name"].get<std::string>();
  } else if (choice != "required") {
    bad("tool_choice",
        "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
        "\"function\": {\"name\": ...}}, got " +
            input_excerpt(choice.dump()));
  }
  if (!given(body, "tools") || !body["tools"].is_array() || body["tools"].empty())
    bad("tool_choice", "'tool_choice' " + input_excerpt(choice.dump()) + " needs 'tools' to choose from");
  struct Call {
    std::string name;
    ordered_json parameters;
    size_t index;
  };
  std::vector<Call> calls;
  for (size_t i = 0; i < body["tools"].size(); ++i) {  // shapes checked by the caller
    const ordered_json& function = body["tools"][i]["function"];
    if (!function.contains("name") || !function["name"].is_string())
      bad("tools", "each tool's function needs a 'name' string");
    const std::string name = function["name"].get<std::string>();
    if (!named.empty() && name != named) continue;
    // Arguments are an object, whatever the schema leaves open: none, null or {} (vLLM's reading of the empty
    // schema; a client parses them into keyword arguments).
    const bool has_parameters = function.contains("parameters") && !function["parameters"].is_null() &&
                                function["parameters"] != ordered_json::object();
    calls.push_back({name, has_parameters ? function["parameters"] : ordered_json{{"type", "object"}}, i});
  }
  if (calls.empty())
    bad("tool_choice", "'tool_choice' names the function '" + input_excerpt(named) + "', which no tool defines");
  const bool many = named.empty() && body.value("parallel_tool_calls", true) != false;
  return compile("tool_choice", [&] {
    // {"name": NAME, "arguments": ARGS} as Qwen3 writes it, ARGS a document
    // of the function's parameters (its $refs resolved within them).
    grammar::GrammarBuilder b;
    std::vector<grammar::Expr> objects;
    for (const Call& c : calls) {
      grammar::Expr arguments;
      try {
        arguments = grammar::json_schema_expr(b, c.parameters);
      } catch (const Error& e) {
        fail("tools[", c.index, "].function.parameters: ", e.what());
      }
      objects.push_back(
          grammar::sequence({grammar::literal("{\"name\": " + ordered_json(c.name).dump() + ", \"arguments\":"),
                             std::move(arguments), grammar::literal("}")}));
    }
    const int32_t call = b.rule("call");
    b.define(call, grammar::sequence({grammar::literal("<tool_call>\n"), grammar::choice(std::move(objects)),
                                      grammar::literal("\n</tool_call>")}));
    const int32_t root = b.rule("root");
    const grammar::Expr first = grammar::GrammarBuilder::ref(call);
    b.define(root, many ? grammar::sequence({first, grammar::star(grammar::sequence(
                                                        {grammar::literal("\n"), grammar::GrammarBuilder::ref(call)}))})
                        : first);
    return std::move(b).build(root);
  });
}

// The grammar of one of vLLM's structured-output constraints: `kind` is
// json, regex, choice, grammar or json_object; `field` names it in errors.
std::shared_ptr<const grammar::Grammar> structured_output(std::string_view kind, const ordered_json& value,
                                                          const std::string& field) {
  if (kind == "json") {
    if (!value.is_object() && !value.is_boolean() && !value.is_string())
      bad(field, "'" + field + "' must be a JSON Schema (an object, or a string holding one)");
    ordered_json schema = value;
    if (value.is_string()) {
      // JSON inside a string: held to the bounds of a request body before it is parsed.
      if (const auto problem = json_shape_problem(value.get_ref<const std::string&>()))
        bad(field, "'" + field + "' " + *problem);
      schema = ordered_json::parse(value.get_ref<const std::string&>(), nullptr, false);
      if (schema.is_discarded()) bad(field, "'" + field + "' is a string that holds no JSON document");
    }
    return compile(field.c_str(), [&] { return grammar::json_schema_grammar(schema); });
  }
  if (kind == "json_object") {
    if (value != true) bad(field, "'" + field + "' must be true");
    static const auto object = std::make_shared<const grammar::Grammar>(grammar::json_object_grammar());
    return object;
  }
  // Text past the grammar's size is refused before it is built: each of its
  // bytes would take an expression (~100 bytes) first.
  auto check_size = [&](size_t bytes) {
    if (bytes > grammar::kMaxGrammarItems)
      bad(field, "'" + field + "' holds " + std::to_string(bytes) + " bytes of text; at most " +
                     std::to_string(grammar::kMaxGrammarItems) + " make a grammar");
  };
  if (kind == "choice") {
    if (!value.is_array() || value.empty())
      bad(field, "'" + field + "' must be a non-empty list of strings, the output being exactly one of them");
    size_t bytes = 0;
    for (const auto& c : value) {
      if (!c.is_string())
        bad(field, "'" + field + "' must be a non-empty list of strings, the output being exactly one of them");
      bytes += c.get_ref<const std::string&>().size() + 1;
    }
    check_size(bytes);
    std::vector<std::string> choices;
    for (const auto& c : value) choices.push_back(c.get<std::string>());
    return compile(field.c_str(), [&] {
      grammar::GrammarBuilder b;
      const int32_t root = b.rule("root");
      b.define(root, b.literal_choice(std::move(choices), "choice"));
      return std::move(b).build(root);
    });
  }
  if (!value.is_string()) bad(field, "'" + field + "' must be a string");
  const std::string& text = value.get_ref<const std::string&>();
  check_size(text.size());
  if (kind == "regex") return compile(field.c_str(), [&] { return grammar::regex_grammar(text); });
  return compile(field.c_str(), [&] { return grammar::gbnf_grammar(text); });
}

// vLLM's `structured_outputs` object: exactly one constraint, and options
// whose defaults are all this server follows.
std::pair<std::string, std::shared_ptr<const grammar::Grammar>> structured_outputs(const ordered_json& spec) {
  if (!spec.is_object()) bad("structured_outputs", "'structured_outputs' must be an object");
  static const std::set<std::string_view> kConstraints = {"json",    "regex",       "choice",
                                                          "grammar", "json_object", "structural_tag"};
  static const std::set<std::string_view> kOptions = {"disable_any_whitespace", "disable_additional_properties",
                                                      "whitespace_pattern", "disable_fallback"};
  std::vector<std::string> kinds;
  for (const auto& item : spec.items()) {
    const std::string field = "structured_outputs." + item.key();
    if (kConstraints.count(item.key())) {
      if (!item.value().is_null()) kinds.push_back(item.key());
    } else if (!kOptions.count(item.key())) {
      bad("structured_outputs", "Unrecognized argument supplied: " + input_excerpt(field));
    } else if (item.key() == "disable_fallback" ? !item.value().is_boolean() && !item.value().is_null()
                                                : !item.value().is_null() && item.value() != false) {
      bad(field, "'" + field + "' = " + input_excerpt(item.value().dump()) + " is not supported by this server");
    }
  }
  if (kinds.empty())
    bad("structured_outputs",
        "'structured_outputs' must give one constraint: json, regex, choice, grammar or json_object");
  if (kinds.size() > 1)
    bad("structured_outputs", "'structured_outputs' gives " + std::to_string(kinds.size()) + " constraints (" +
                                  kinds[0] + ", " + kinds[1] + "): one only");
  const std::string field = "structured_outputs." + kinds[0];
  if (kinds[0] == "structural_tag") bad(field, "'" + field + "' is not supported by this server");
  return {field, structured_output(kinds[0], spec[kinds[0]], field)};
}

}  // namespace

bool is_structured_output_field(std::string_view key) {
  static const std::set<std::string_view> kFields = {"structured_outputs",
                                                     "guided_json",
                                                     "guided_regex",
                                                     "guided_choice",
                                                     "guided_grammar",
                                                     "guided_decoding_backend",
                                                     "guided_whitespace_pattern",
                                                     "grammar",
                                                     "json_schema"};
  return kFields.count(key) > 0;
}

std::shared_ptr<const OutputGrammar> parse_reply_grammar(const ordered_json& body, const ModelBundle& bundle,
                                                         ReasoningBlock reasoning) {
  // At most one of the fields that constrain the reply.
  std::string field;
  std::shared_ptr<const grammar::Grammar> g;
  auto take = [&](const std::string& name, std::shared_ptr<const grammar::Grammar> constraint) {
    if (!constraint) return;
    if (g)
      bad(name, "'" + field + "' and '" + name +
                    "' cannot both constrain the reply (response_format, structured_outputs, the guided_ fields, "
                    "grammar, json_schema and a required tool_choice each describe a whole reply)");
    field = name;
    g = std::move(constraint);
  };
  if (given(body, "response_format")) take("response_format", response_format(body["response_format"]));
  if (given(body, "structured_outputs")) {
    auto [name, constraint] = structured_outputs(body["structured_outputs"]);
    take(name, std::move(constraint));
  }
  // vLLM's fields before structured_outputs (removed in its 0.12; clients still send them).
  for (const char* kind : {"json", "regex", "choice", "grammar"}) {
    const std::string name = std::string("guided_") + kind;
    if (given(body, name.c_str())) take(name, structured_output(kind, body[name], name));
  }
  // llama-server's fields.
  if (given(body, "grammar")) take("grammar", structured_output("grammar", body["grammar"], "grammar"));
  if (given(body, "json_schema")) take("json_schema", structured_output("json", body["json_schema"], "json_schema"));
  if (given(body, "guided_decoding_backend") && !body["guided_decoding_backend"].is_string())
    bad("guided_decoding_backend", "'guided_decoding_backend' must be a string");
  if (given(body, "guided_whitespace_pattern"))
    bad("guided_whitespace_pattern", "'guided_whitespace_pattern' is not supported by this server");
  const bool forced_tools =
      given(body, "tool_choice") && body["tool_choice"] != "auto" && body["tool_choice"] != "none";
  if (forced_tools) take("tool_choice", tool_choice(body));
  if (!g) return nullptr;
  auto out = output_grammar(std::move(g), bundle.require_tokenizer(), bundle.token_trie(), reasoning, field);
  // The first mask here, on the HTTP thread: a grammar too ambiguous to follow
  // is the client's error, found before the engine spends a step on it.
  try {
    grammar::Matcher matcher(out->grammar);
    std::vector<uint64_t> mask;
    out->vocabulary->allowed(matcher, mask);
  } catch (const Error& e) {
    bad(field, e.what());
  }
  return out;
}

}  // namespace qinfer::server
