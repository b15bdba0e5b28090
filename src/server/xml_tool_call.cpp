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
constexpr std::string_view kToolCallEnd = "</tool_call>";
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

bool is_string_type(const std::string& type) {
  return type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" || type == "enum";
}

const ordered_json* schema_of(const std::string& key, const ordered_json* parameters) {
  return parameters && parameters->contains(key) ? &(*parameters)[key] : nullptr;
}

// The value is a string whatever its text: it can go out as it comes.
bool always_a_string(const std::string& key, const ordered_json* parameters) {
  const ordered_json* schema = schema_of(key, parameters);
  if (!schema) return true;
  const auto [type, nullable] = type_of(*schema);
  return is_string_type(type) && !nullable;
}

ordered_json converted(std::string_view value, const std::string& key, const ordered_json* parameters) {
  const ordered_json* schema = schema_of(key, parameters);
  if (!schema) return std::string(value);
  const auto [type, nullable] = type_of(*schema);
  const bool null_text = lowercase(value) == "null" || lowercase(value) == "none";
  if (nullable && null_text) return nullptr;
  if (is_string_type(type)) return std::string(value);
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

bool bad_name_char(char c) { return std::string_view(" \t\r\n\"'{}<>").find(c) != std::string_view::npos; }

std::string json_text(const ordered_json& value) {
  // Bytes that are not UTF-8 (a model can write them) become U+FFFD rather than fail the reply.
  return value.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// A piece of a JSON string: escaped as the whole string escapes it, without the quotes.
std::string json_string_part(std::string_view text) {
  const std::string quoted = json_text(std::string(text));
  return quoted.substr(1, quoted.size() - 2);
}

bool starts_at(std::string_view text, size_t at, std::string_view tag) { return text.substr(at, tag.size()) == tag; }

// The text from `at` on is a beginning of `tag` short of all of it (nothing counts).
bool begins_at(std::string_view text, size_t at, std::string_view tag) {
  const std::string_view rest = text.substr(at);
  return rest.size() < tag.size() && tag.substr(0, rest.size()) == rest;
}

// Bytes at the end of `text` that begin a UTF-8 character not yet whole.
size_t unfinished_utf8(std::string_view text) {
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
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

bool is_function_name(std::string_view name) {
  return !name.empty() && std::none_of(name.begin(), name.end(), bad_name_char);
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
    if (!is_function_name(name)) return {};
    // Left open, a function ends where the next begins on a line of its own.
    const size_t next = std::min(body.find("\n<function=", name_end), body.size() - 1) + 1;
    const size_t end = std::min(structural_end(body, kFunctionEnd, {kFunction}, name_end + 1, next), next);
    const auto args = arguments(body.substr(name_end + 1, end - name_end - 1), parameters_of(tools, name));
    if (!args) return {};
    calls.push_back({name, json_text(*args)});
    pos = body.substr(end, kFunctionEnd.size()) == kFunctionEnd ? end + kFunctionEnd.size() : end;
  }
  return calls;
}

std::vector<XmlToolCallReader::Piece> XmlToolCallReader::push(std::string_view text) {
  std::vector<Piece> out;
  if (final_) return out;
  body_ += text;
  while (step(out)) {
  }
  return out;
}

std::vector<XmlToolCallReader::Piece> XmlToolCallReader::finish(size_t length) {
  std::vector<Piece> out;
  if (final_) return out;
  // What is cut was held back (may_be_cut_at), so it was neither read nor sent.
  if (length < std::min(body_.size(), state_ == State::Value ? std::max(pos_, sent_) : pos_)) {
    fail();
    return out;
  }
  body_.resize(std::min(length, body_.size()));
  spaces_.clear();
  final_ = true;
  while (step(out)) {
  }
  return out;
}

void XmlToolCallReader::fail() {
  if (shape_ == Shape::Undecided) {
    shape_ = Shape::Other;
  } else {
    state_ = State::Failed;
    unread_from_ = element_start_;
  }
}

// skip_space, remembering the runs it read while the reader waits at one
// place: a run that grows a piece at a time is not read again from its start.
size_t XmlToolCallReader::skip_space_from(size_t from) const {
  if (memo_pos_ != pos_ || memo_state_ != state_) {
    spaces_.clear();
    memo_pos_ = pos_;
    memo_state_ = state_;
  }
  for (auto& [start, end] : spaces_)
    if (start == from) return end = skip_space(body_, end);
  // A few runs at most are read from one place (after a tag, and while the tag itself comes): the oldest goes.
  const size_t end = skip_space(body_, from);
  if (spaces_.size() == 4) spaces_.erase(spaces_.begin());
  spaces_.emplace_back(from, end);
  return end;
}

bool XmlToolCallReader::step(std::vector<Piece>& out) {
  if (shape_ == Shape::Other) return false;
  const std::string_view b = body_;
  switch (state_) {
    case State::Function: {
      const size_t at = skip_space_from(pos_);
      element_start_ = at;
      if (starts_at(b, at, kFunction)) {
        pos_ = tag_end_ = at + kFunction.size();
        state_ = State::Name;
        return true;
      }
      if (at == b.size() && final_ && shape_ == Shape::Streamed)
        state_ = State::Done;
      else if (final_ || !begins_at(b, at, kFunction))
        fail();
      return false;
    }
    case State::Name:
      for (; pos_ < b.size() && b[pos_] != '>'; ++pos_)
        if (bad_name_char(b[pos_])) return fail(), false;
      if (pos_ == b.size()) return final_ ? (fail(), false) : false;
      if (pos_ == tag_end_) return fail(), false;
      name_ = b.substr(tag_end_, pos_ - tag_end_);
      parameters_ = tools_ ? parameters_of(*tools_, name_) : nullptr;
      keys_.clear();
      pos_ = tag_end_ = pos_ + 1;
      state_ = State::Inner;
      return true;
    case State::Inner: {  // between the header and the first parameter: whitespace only
      const size_t at = skip_space_from(pos_);
      const End end = function_end_at(at);
      if (starts_at(b, at, kParameter) || end.verdict == Verdict::Yes) {
        shape_ = Shape::Streamed;
        out.push_back({name_, ""});
      }
      if (starts_at(b, at, kParameter)) {
        element_start_ = at;
        pos_ = tag_end_ = at + kParameter.size();
        state_ = State::Key;
        return true;
      }
      if (end.verdict == Verdict::Yes) return end_function(end.resume, out), true;
      if (end.verdict == Verdict::No && (final_ || !begins_at(b, at, kParameter))) fail();
      return false;
    }
    case State::Key:
      for (; pos_ < b.size() && b[pos_] != '>'; ++pos_)
        if (b[pos_] == '<' || b[pos_] == '\n') return fail(), false;
      if (pos_ == b.size()) return final_ ? (fail(), false) : false;
      if (pos_ == tag_end_ || keys_.size() == kMaxParameters) return fail(), false;
      key_ = b.substr(tag_end_, pos_ - tag_end_);
      send((keys_.empty() ? "{" : ",") + json_text(key_) + ":" + (always_a_string(key_, parameters_) ? "\"" : ""), out);
      keys_.insert(key_);
      value_streams_ = always_a_string(key_, parameters_);
      value_begun_ = false;
      value_start_ = sent_ = pos_ = pos_ + 1;
      state_ = State::Value;
      return true;
    case State::Value:
      if (!value_begun_ && value_start_ < b.size()) {
        value_begun_ = true;
        if (b[value_start_] == '\n') sent_ = value_start_ + 1;
      }
      for (;;) {
        const size_t at = std::min(b.find_first_of("\n<", pos_), b.size());
        End end = value_end_at(at);
        if (at == b.size() && final_) end = {Verdict::Yes, at, at, true};
        if (end.verdict == Verdict::No) {
          pos_ = at + 1;
          continue;
        }
        if (end.verdict == Verdict::Undecided) {
          pos_ = at;
          if (value_streams_) stream_value(at, out);
          return false;
        }
        end_value(end.value_end, out);
        if (end.function_ends) return end_function(end.resume, out), true;
        element_start_ = end.resume - kParameter.size();
        pos_ = tag_end_ = end.resume;
        state_ = State::Key;
        return true;
      }
    case State::Done:
    case State::Failed:
      return false;
  }
  return false;
}

// Whether the function ends at `at` (the end of its inside): at a
// </function> that whitespace and the next function (or the body's end)
// follow, at a <function= on a line of its own, or at the end of the body.
XmlToolCallReader::End XmlToolCallReader::function_end_at(size_t at) const {
  const std::string_view b = body_;
  if (at == b.size()) return final_ ? End{Verdict::Yes, at, at, true} : End{Verdict::Undecided};
  if (starts_at(b, at, kFunctionEnd)) {
    const size_t next = skip_space_from(at + kFunctionEnd.size());
    if ((next == b.size() && final_) || starts_at(b, next, kFunction)) return {Verdict::Yes, at, next, true};
    return !final_ && (begins_at(b, next, kFunction) || may_be_cut_at(next)) ? End{Verdict::Undecided} : End{};
  }
  const bool own_line = at > 0 && b[at - 1] == '\n';
  if (own_line && starts_at(b, at, kFunction)) return {Verdict::Yes, at, at, true};
  if (!final_ && (begins_at(b, at, kFunctionEnd) || (own_line && begins_at(b, at, kFunction)) || may_be_cut_at(at)))
    return {Verdict::Undecided};
  return {};
}

// Whether the open value ends at `at` (a newline or a '<' in it, or the end
// of what came): where the next parameter or the function begins on a line
// of its own, or at a closing tag the next element (or the end) follows.
XmlToolCallReader::End XmlToolCallReader::value_end_at(size_t at) const {
  const std::string_view b = body_;
  if (at == b.size()) return {Verdict::Undecided};
  if (b[at] == '\n') {
    if (starts_at(b, at + 1, kParameter)) return {Verdict::Yes, at + 1, at + 1 + kParameter.size(), false};
    if (starts_at(b, at + 1, kFunction)) return {Verdict::Yes, at + 1, at + 1, true};
    const bool may_begin = begins_at(b, at + 1, kParameter) || begins_at(b, at + 1, kFunction);
    return !final_ && may_begin ? End{Verdict::Undecided} : End{};
  }
  if (starts_at(b, at, kParameterEnd)) {
    const size_t next = skip_space_from(at + kParameterEnd.size());
    if (starts_at(b, next, kParameter)) return {Verdict::Yes, at, next + kParameter.size(), false};
    End end = function_end_at(next);
    end.value_end = at;
    if (end.verdict == Verdict::No && !final_ && begins_at(b, next, kParameter)) end.verdict = Verdict::Undecided;
    return end;
  }
  if (starts_at(b, at, kFunctionEnd)) return function_end_at(at);
  const bool may_begin = begins_at(b, at, kParameterEnd) || begins_at(b, at, kFunctionEnd) || may_be_cut_at(at);
  return !final_ && may_begin ? End{Verdict::Undecided} : End{};
}

// The reply splitter takes a </tool_call> written inside an open function
// as text, and ends the body before it where the next call follows; at the
// reply's end, it also cuts off a </tool_call> begun and whitespace. So
// until more text comes, a beginning of the tag and whitespace after it may
// be no part of the body.
bool XmlToolCallReader::may_be_cut_at(size_t at) const {
  if (final_) return false;
  size_t tag = 0;
  while (tag < kToolCallEnd.size() && at + tag < body_.size() && body_[at + tag] == kToolCallEnd[tag]) ++tag;
  return skip_space_from(at + tag) == body_.size();
}

// Sends the open string value up to `safe`, less what may still not be
// part of it: a newline that may be its last (one is taken off its end),
// and a character whose bytes have not all come.
void XmlToolCallReader::stream_value(size_t safe, std::vector<Piece>& out) {
  if (!value_begun_ || safe <= sent_) return;
  if (body_[safe - 1] == '\n' && (safe == body_.size() || body_[safe] == '<')) --safe;
  safe -= unfinished_utf8(std::string_view(body_).substr(sent_, safe - sent_));
  if (safe <= sent_) return;
  send(json_string_part(std::string_view(body_).substr(sent_, safe - sent_)), out);
  sent_ = safe;
}

void XmlToolCallReader::end_value(size_t value_end, std::vector<Piece>& out) {
  size_t begin = value_start_, end = value_end;
  if (begin < end && body_[begin] == '\n') ++begin;
  if (begin < end && body_[end - 1] == '\n') --end;
  send(value_streams_ ? json_string_part(std::string_view(body_).substr(sent_, end - sent_)) + "\""
                      : json_text(converted(std::string_view(body_).substr(begin, end - begin), key_, parameters_)),
       out);
}

void XmlToolCallReader::end_function(size_t resume, std::vector<Piece>& out) {
  send(keys_.empty() ? "{}" : "}", out);
  pos_ = resume;
  state_ = State::Function;
}

// More arguments of the latest call.
void XmlToolCallReader::send(std::string_view arguments, std::vector<Piece>& out) {
  if (out.empty()) out.emplace_back();
  out.back().arguments += arguments;
}

}  // namespace qinfer::server
