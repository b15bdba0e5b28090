#include "server/xml_tool_call.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "server/json_shape.h"

namespace qinfer::server {

using nlohmann::ordered_json;

namespace {

constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=", kParameterEnd = "</parameter>";
// Each value's end is searched for through the rest of its function: a
// bound on the parameters keeps a long reply's calls from costing seconds.
constexpr size_t kMaxParameters = 1000;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (text.substr(0, p.size()) == p) return true;
  return false;
}

// Python's int(text) for what fits 64 bits: surrounding whitespace, a sign,
// decimal digits with single underscores between them.
std::optional<ordered_json> integer(std::string_view text) {
  text = trimmed(text);
  std::string digits;
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9')
      digits += text[i];
    else if (!(text[i] == '_' && i > 0 && i + 1 < text.size() && text[i - 1] != '_'))
      return std::nullopt;
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  const unsigned long long magnitude = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  if (!negative) return ordered_json(static_cast<uint64_t>(magnitude));
  if (magnitude > static_cast<unsigned long long>(INT64_MAX) + 1) return std::nullopt;
  return ordered_json(magnitude == 0 ? int64_t{0} : -static_cast<int64_t>(magnitude - 1) - 1);
}

// Python's float(text), a whole number as an integer (vLLM's rule); what is
// not finite has no JSON form and stays text.
std::optional<ordered_json> number(std::string_view text) {
  const std::string s(trimmed(text));
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return std::nullopt;  // strtod reads hex too
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(value)) return std::nullopt;
  if (value == std::trunc(value) && std::fabs(value) < 9.2e18) return ordered_json(static_cast<int64_t>(value));
  return ordered_json(value);
}

// The declared parameters ("properties") of the tool named `name`.
const ordered_json* parameters_of(const ordered_json& tools, std::string_view name) {
  const ordered_json* f = offered_function(tools, name);
  if (!f) return nullptr;
  const auto params = f->find("parameters");
  if (params == f->end() || !params->is_object()) return nullptr;
  const auto properties = params->find("properties");
  return properties != params->end() && properties->is_object() ? &*properties : nullptr;
}

// A value as JSON, when it is JSON a reply can carry (json_shape.h).
std::optional<ordered_json> json_value(std::string_view text) {
  if (json_shape_problem(text)) return std::nullopt;
  ordered_json parsed = ordered_json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

// The schema's type, lowercased (the first that is not "null" of an anyOf),
// and whether it admits null.
std::pair<std::string, bool> type_of(const ordered_json& schema) {
  if (!schema.is_object()) return {"string", false};
  if (const auto type = schema.find("type"); type != schema.end()) {
    // A list of types (["integer", "null"]) is no name: read as JSON below, as vLLM's fallback does.
    const std::string name = type->is_string() ? lowercase(trimmed(type->get<std::string>())) : "";
    return {name, name == "null"};
  }
  const auto any_of = schema.find("anyOf");
  if (any_of == schema.end() || !any_of->is_array()) return {"string", false};
  std::string first;
  bool nullable = false;
  for (const ordered_json& option : *any_of) {
    const auto type = option.is_object() ? option.find("type") : option.end();
    if (!option.is_object() || type == option.end()) continue;
    const std::string name = type->is_string() ? lowercase(trimmed(type->get<std::string>())) : "";
    if (name == "null")
      nullable = true;
    else if (first.empty())
      first = name;
  }
  return {first.empty() ? "string" : first, nullable};
}

ordered_json converted(std::string_view value, const std::string& key, const ordered_json* parameters) {
  const ordered_json* schema = parameters && parameters->contains(key) ? &(*parameters)[key] : nullptr;
  if (!schema) return std::string(value);
  const auto [type, nullable] = type_of(*schema);
  const bool null_text = lowercase(value) == "null" || lowercase(value) == "none";
  if (nullable && null_text) return nullptr;
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" || type == "enum")
    return std::string(value);
  if (null_text) return nullptr;
  if (starts_with_any(type, {"int", "uint", "long", "short", "unsigned"}))
    return integer(value).value_or(ordered_json(std::string(value)));
  if (starts_with_any(type, {"num", "float"})) return number(value).value_or(ordered_json(std::string(value)));
  if (type == "boolean" || type == "bool" || type == "binary") return lowercase(value) == "true";
  return json_value(value).value_or(ordered_json(std::string(value)));
}

// Where a closing tag between `from` and `until` ends its element: followed,
// after whitespace, by one of `next` or the end of `text`. The same tag
// written inside a value (code that mentions it) is followed by more of it.
size_t structural_end(std::string_view text, std::string_view tag, std::initializer_list<std::string_view> next,
                      size_t from, size_t until) {
  for (size_t at = text.find(tag, from); at < until; at = text.find(tag, at + 1)) {
    const size_t after = skip_space(text, at + tag.size());
    if (after == text.size()) return at;
    for (std::string_view n : next)
      if (text.substr(after, n.size()) == n) return at;
  }
  return std::string_view::npos;
}

// The <parameter=KEY>VALUE</parameter> list of one function, as an object;
// nullopt when something else stands between them.
std::optional<ordered_json> arguments(std::string_view inner, const ordered_json* parameters) {
  ordered_json args = ordered_json::object();
  for (size_t pos = skip_space(inner, 0); pos < inner.size(); pos = skip_space(inner, pos)) {
    if (inner.substr(pos, kParameter.size()) != kParameter) return std::nullopt;
    const size_t key_end = inner.find('>', pos + kParameter.size());
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(inner.substr(pos + kParameter.size(), key_end - pos - kParameter.size()));
    if (key.empty() || key.find_first_of("<\n") != std::string::npos) return std::nullopt;
    if (args.size() == kMaxParameters) return std::nullopt;
    const size_t start = key_end + 1;
    // Left open, a value ends where the next parameter begins on a line of its own.
    const size_t next = std::min(inner.find("\n<parameter=", start), inner.size() - 1) + 1;
    const size_t end = std::min(structural_end(inner, kParameterEnd, {kParameter}, start, next), next);
    std::string_view value = inner.substr(start, end - start);
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    args[key] = converted(value, key, parameters);
    pos = inner.substr(end, kParameterEnd.size()) == kParameterEnd ? end + kParameterEnd.size() : end;
  }
  return args;
}

}  // namespace

const ordered_json* offered_function(const ordered_json& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const ordered_json& tool : tools) {
    const auto f = tool.find("function");
    if (f == tool.end() || !f->is_object()) continue;
    const auto n = f->find("name");
    if (n != f->end() && n->is_string() && n->get_ref<const std::string&>() == name) return &*f;
  }
  return nullptr;
}

bool teaches_xml_tool_calls(const ChatTemplate& chat_template) {
  const std::string& text = chat_template.text(/*with_tools=*/true);
  return text.find(kFunction) != std::string::npos && text.find(kParameter) != std::string::npos;
}

std::vector<ToolCall> parse_xml_tool_calls(std::string_view body, const ordered_json& tools) {
  std::vector<ToolCall> calls;
  for (size_t pos = skip_space(body, 0); pos < body.size(); pos = skip_space(body, pos)) {
    if (body.substr(pos, kFunction.size()) != kFunction) return {};
    const size_t name_end = body.find('>', pos + kFunction.size());
    if (name_end == std::string_view::npos) return {};
    const std::string name(body.substr(pos + kFunction.size(), name_end - pos - kFunction.size()));
    if (name.empty() || name.find_first_of(" \t\r\n\"'{}<>") != std::string::npos)
      return {};  // a template's {{ }} is no name
    // Left open, a function ends where the next begins on a line of its own.
    const size_t next = std::min(body.find("\n<function=", name_end), body.size() - 1) + 1;
    const size_t end = std::min(structural_end(body, kFunctionEnd, {kFunction}, name_end + 1, next), next);
    const auto args = arguments(body.substr(name_end + 1, end - name_end - 1), parameters_of(tools, name));
    if (!args) return {};
    // Bytes that are not UTF-8 (a model can write them) become U+FFFD rather than fail the reply.
    calls.push_back({name, args->dump(-1, ' ', false, ordered_json::error_handler_t::replace)});
    pos = body.substr(end, kFunctionEnd.size()) == kFunctionEnd ? end + kFunctionEnd.size() : end;
  }
  return calls;
}

}  // namespace qinfer::server
