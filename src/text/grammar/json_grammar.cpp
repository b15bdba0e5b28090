#include "text/grammar/json_grammar.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "text/grammar/number_range.h"
#include "text/grammar/regex.h"
#include "text/grammar/string_formats.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

using nlohmann::ordered_json;

// Integer digits at most: JSON has no bound, but a double (what parsers
// read, nlohmann's included) overflows past ~1e308.
constexpr uint32_t kMaxIntegerDigits = 100;

Expr byte(char c) { return bytes(ByteSet().set(static_cast<unsigned char>(c))); }
Expr hex_digit() { return bytes(byte_class("0-9a-fA-F")); }
Expr digit() { return bytes(byte_class("0-9")); }

// The rules every JSON grammar shares, defined once per builder by name: ws,
// char, string, integer, number, value.
struct JsonRules {
  GrammarBuilder& b;
  explicit JsonRules(GrammarBuilder& builder) : b(builder) {}

  // Defines `name` by `make` unless the builder has it; a reference to it.
  template <class Make>
  Expr shared(const char* name, Make make) {
    if (!b.has_rule(name)) {
      const int32_t r = b.rule(name);  // declared first: `make` may refer to it
      b.define(r, make());
    }
    return b.ref(name);
  }

  Expr ws() {
    return shared("ws", [] {
      return optional(choice({byte(' '), sequence({byte('\n'), repeat(bytes(byte_class(" \t")), 0, 20)})}));
    });
  }
  // One character of a string's contents, as JSON Schema counts them (code
  // points): printable ASCII but '"' and '\\', an escape (a surrogate pair of
  // \u escapes is one character; a lone surrogate none, as strict parsers
  // refuse it), or a well-formed multi-byte UTF-8 character.
  Expr string_char() {
    return shared("char", [] {
      const Expr tail = bytes(byte_class("\x80-\xbf"));
      const Expr u = sequence({byte('\\'), byte('u')});
      return choice({bytes(byte_class(" -!#-[]-\x7f")), sequence({byte('\\'), bytes(byte_class("\"\\/bfnrt"))}),
                     sequence({u, bytes(byte_class("0-9a-cA-CeEfF")), hex_digit(), hex_digit(), hex_digit()}),
                     sequence({u, bytes(byte_class("dD")), bytes(byte_class("0-7")), hex_digit(), hex_digit()}),
                     sequence({u, bytes(byte_class("dD")), bytes(byte_class("89abAB")), hex_digit(), hex_digit(), u,
                               bytes(byte_class("dD")), bytes(byte_class("c-fC-F")), hex_digit(), hex_digit()}),
                     sequence({bytes(byte_class("\xc2-\xdf")), tail}),
                     sequence({byte('\xe0'), bytes(byte_class("\xa0-\xbf")), tail}),
                     sequence({bytes(byte_class("\xe1-\xec\xee-\xef")), tail, tail}),
                     sequence({byte('\xed'), bytes(byte_class("\x80-\x9f")), tail}),
                     sequence({byte('\xf0'), bytes(byte_class("\x90-\xbf")), tail, tail}),
                     sequence({bytes(byte_class("\xf1-\xf3")), tail, tail, tail}),
                     sequence({byte('\xf4'), bytes(byte_class("\x80-\x8f")), tail, tail})});
    });
  }
  Expr string(uint32_t min = 0, uint32_t max = Expr::kUnbounded) {
    if (min == 0 && max == Expr::kUnbounded)
      return shared("string", [&] { return sequence({byte('"'), star(string_char()), byte('"')}); });
    return sequence({byte('"'), repeat(string_char(), min, max), byte('"')});
  }
  // At most kMaxIntegerDigits integer digits and a two-digit exponent.
  Expr integer() {
    return shared("integer", [] {
      return sequence(
          {optional(byte('-')),
           choice({byte('0'), sequence({bytes(byte_class("1-9")), repeat(digit(), 0, kMaxIntegerDigits - 1)})})});
    });
  }
  Expr number() {
    return shared("number", [&] {
      return sequence(
          {integer(), optional(sequence({byte('.'), repeat(digit(), 1)})),
           optional(sequence({bytes(byte_class("eE")), optional(bytes(byte_class("-+"))), repeat(digit(), 1, 2)}))});
    });
  }
  Expr boolean() { return choice({literal("true"), literal("false")}); }
  // open ws (member ("," ws member)*)? close, with `member` a rule (it
  // appears twice: an expression would double at every nesting level).
  Expr members(char open, char close, const Expr& member) {
    const int32_t r = b.new_anonymous_rule("member");
    b.define(r, member);
    const Expr m = GrammarBuilder::ref(r);
    return sequence({byte(open), ws(), optional(sequence({m, star(sequence({byte(','), ws(), m}))})), byte(close)});
  }
  Expr map_of(const Expr& value) { return members('{', '}', sequence({string(), ws(), byte(':'), ws(), value, ws()})); }
  Expr array_of(const Expr& item) { return members('[', ']', sequence({item, ws()})); }
  Expr value() {
    return shared("value", [&] {
      const Expr self = b.ref("value");
      return choice({map_of(self), array_of(self), string(), number(), boolean(), literal("null")});
    });
  }
};

// Text from the schema in a message: cut at 64 bytes on a character
// boundary, NUL spelled out (what() would end there).
std::string excerpt(std::string_view text) {
  size_t end = std::min<size_t>(text.size(), 64);
  if (end < text.size())
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out;
  for (const char c : text.substr(0, end)) c == '\0' ? out += "\\u0000" : out += c;
  return end < text.size() ? out + "..." : out;
}

// JSON pointer token (in messages): '~' as "~0", '/' as "~1".
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return excerpt(out);
}

// A $ref's pointer token read back: %XX, then "~1" -> '/', "~0" -> '~'.
std::string decode_pointer_token(const std::string& token) {
  std::string unpercent;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '%' && i + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(token[i + 2]))) {
      unpercent += static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      unpercent += token[i];
    }
  }
  std::string out;
  for (size_t i = 0; i < unpercent.size(); ++i) {
    if (unpercent[i] == '~' && i + 1 < unpercent.size() && (unpercent[i + 1] == '0' || unpercent[i + 1] == '1')) {
      out += unpercent[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += unpercent[i];
    }
  }
  return out;
}

// discriminator: OpenAPI's (Pydantic writes it beside a tagged oneOf), naming
// the property whose values tell the branches apart; it changes no match.
const std::set<std::string> kAnnotations = {"title", "description", "default",      "examples", "$schema",
                                            "$id",   "$comment",    "deprecated",   "readOnly", "writeOnly",
                                            "$defs", "definitions", "discriminator"};
const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeywords = {"items", "minItems", "maxItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

// The types a JSON value has ("integer" values are numbers too).
std::set<std::string> types_of(const ordered_json& v) {
  if (v.is_object()) return {"object"};
  if (v.is_array()) return {"array"};
  if (v.is_string()) return {"string"};
  if (v.is_boolean()) return {"boolean"};
  if (v.is_null()) return {"null"};
  const double d = v.get<double>();
  if (v.is_number_integer() || (std::isfinite(d) && d == std::floor(d))) return {"number", "integer"};
  return {"number"};
}

// JSON Schema -> Expr for one schema (the root its $refs resolve against).
// Every subschema becomes a rule of its own, so that a grammar grows with the
// schema's size whatever refers to a part how often.
class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& b, const ordered_json& root) : b_(b), json_(b), root_(root) {}
  JsonRules& json() { return json_; }

  Expr compile(const ordered_json& s, const std::string& at) {
    if (++depth_ > 64) refuse(at, "nests deeper than 64 levels");
    Expr e = compile_inner(s, at);
    --depth_;
    if (e.kind == Expr::Kind::Rule || e.kind == Expr::Kind::Bytes) return e;
    const int32_t r = b_.new_anonymous_rule("schema " + at);
    b_.define(r, std::move(e));
    return GrammarBuilder::ref(r);
  }

 private:
  [[noreturn]] void refuse(const std::string& at, const std::string& what) {
    fail("json_schema: ", at.empty() ? "the schema" : at, " ", what);
  }

  Expr compile_inner(const ordered_json& s, const std::string& at) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(at, "is false: no document matches it");
      return json_.value();
    }
    if (!s.is_object()) refuse(at, "must be an object or a boolean");
    static const std::set<std::string> kHandled = {"type",
                                                   "properties",
                                                   "required",
                                                   "additionalProperties",
                                                   "items",
                                                   "minItems",
                                                   "maxItems",
                                                   "minLength",
                                                   "maxLength",
                                                   "pattern",
                                                   "format",
                                                   "minimum",
                                                   "maximum",
                                                   "exclusiveMinimum",
                                                   "exclusiveMaximum",
                                                   "enum",
                                                   "const",
                                                   "anyOf",
                                                   "oneOf",
                                                   "allOf",
                                                   "$ref"};
    for (const auto& item : s.items())
      if (!kAnnotations.count(item.key()) && !kHandled.count(item.key()) &&
          !(item.key() == "uniqueItems" && item.value() == false))  // false: JSON Schema's default, asking nothing
        refuse(at + "/" + pointer_token(item.key()), "is a keyword qinfer does not follow (its output could break it)");
    for (const char* key : {"$ref", "anyOf", "oneOf", "allOf"})
      if (s.contains(key))
        for (const auto& item : s.items())
          if (item.key() != key && !kAnnotations.count(item.key()))
            refuse(at + "/" + pointer_token(item.key()),
                   std::string("beside ") + key + " is not followed (only annotations may be)");
    if (s.contains("$ref")) return reference(s, at);
    if (s.contains("enum") || s.contains("const")) return values(s, at);
    if (s.contains("anyOf")) return choice(branches(s, "anyOf", at));
    if (s.contains("oneOf")) {
      check_disjoint(s["oneOf"], at + "/oneOf");
      return choice(branches(s, "oneOf", at));
    }
    if (s.contains("allOf")) {
      const auto& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) refuse(at + "/allOf", "is followed only with exactly one schema");
      return compile(list[0], at + "/allOf/0");
    }
    if (!s.contains("type")) {  // the type the keywords are about; without any, every value
      const std::string t = implied_type(s, at);
      return t.empty() ? json_.value() : typed(t, s, at);
    }
    const auto& type = s["type"];
    if (type.is_string()) return typed(type.get<std::string>(), s, at);
    if (!type.is_array() || type.empty()) refuse(at + "/type", "must be a type name or a non-empty array of them");
    std::vector<Expr> alts;
    for (const auto& t : type) {
      if (!t.is_string()) refuse(at + "/type", "must hold type names");
      alts.push_back(typed(t.get<std::string>(), s, at));
    }
    return choice(std::move(alts));
  }

  // Without "type", keywords of one kind say what the value is: JSON Schema
  // would let other types through, but they are not what the schema is about.
  std::string implied_type(const ordered_json& s, const std::string& at) {
    std::string type;
    for (const auto& item : s.items()) {
      const char* t = kObjectKeywords.count(item.key())   ? "object"
                      : kArrayKeywords.count(item.key())  ? "array"
                      : kStringKeywords.count(item.key()) ? "string"
                      : kNumberKeywords.count(item.key()) ? "number"
                                                          : nullptr;
      if (!t) continue;
      if (!type.empty() && type != t)
        refuse(at, "has keywords of " + type + "s and of " + t + "s but no 'type' to say which it is");
      type = t;
    }
    return type;
  }

  std::vector<Expr> branches(const ordered_json& s, const char* key, const std::string& at) {
    const auto& list = s[key];
    if (!list.is_array() || list.empty()) refuse(at + "/" + key, "must be a non-empty array");
    std::vector<Expr> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(compile(list[i], at + "/" + key + "/" + std::to_string(i)));
    return alts;
  }

  // enum / const: the values (compact JSON), of the "type" beside them if
  // there is one; other keywords beside them are not followed.
  Expr values(const ordered_json& s, const std::string& at) {
    // Both (Pydantic writes a Literal so): the const, where the enum holds it.
    if (s.contains("enum") && s.contains("const")) {
      const ordered_json& list = s["enum"];
      const std::string value = canonical(s["const"]);
      if (!list.is_array() ||
          std::none_of(list.begin(), list.end(), [&](const ordered_json& v) { return canonical(v) == value; }))
        refuse(at + "/const", "is not among the enum's values beside it: no value matches");
    }
    const char* key = s.contains("const") ? "const" : "enum";
    for (const auto& item : s.items())
      if (item.key() != key && item.key() != "type" && item.key() != "enum" && !kAnnotations.count(item.key()))
        refuse(at + "/" + pointer_token(item.key()), std::string("beside ") + key + " is not followed");
    std::set<std::string> allowed_types;
    if (s.contains("type")) {
      const ordered_json types = s["type"].is_array() ? s["type"] : ordered_json::array({s["type"]});
      for (const auto& t : types) {
        if (!t.is_string()) refuse(at + "/type", "must hold type names");
        allowed_types.insert(t.get<std::string>());
      }
    }
    std::vector<std::string> texts;
    const ordered_json list = s.contains("const") ? ordered_json::array({s["const"]}) : s["enum"];
    if (!list.is_array() || list.empty()) refuse(at + "/enum", "must be a non-empty array");
    for (const auto& v : list) {
      check_exact(v, at + "/" + key);
      bool typed_ok = allowed_types.empty();
      for (const std::string& t : types_of(v)) typed_ok = typed_ok || allowed_types.count(t);
      if (typed_ok) texts.push_back(v.dump());
    }
    if (texts.empty()) refuse(at + "/" + key, "has no value of the type beside it");
    return b_.literal_choice(std::move(texts), "enum");
  }

  // Refuses a value holding an integer that reading it as a double changed
  // (beyond 2^53): written back, it would be another number.
  void check_exact(const ordered_json& v, const std::string& at) {
    std::vector<const ordered_json*> todo{&v};
    while (!todo.empty()) {
      const ordered_json* x = todo.back();
      todo.pop_back();
      if (x->is_structured())
        for (const auto& item : *x) todo.push_back(&item);
      else if (x->is_number_float() && std::fabs(x->get<double>()) >= 9007199254740992.0 &&
               x->get<double>() == std::floor(x->get<double>()))
        refuse(at, "holds " + x->dump() + ", an integer beyond 2^53 whose exact value reading it lost");
    }
  }

  // oneOf is a choice like anyOf, which is right only when no document can
  // match two branches: refused unless each pair differs in type, or in the
  // values of a property both require (a discriminator), or in their values.
  // Each branch is summed up once; branches that all list their values are
  // checked through one set of them, others pair by pair, within a bound on
  // the work (hunt and review findings: 10,000 const branches, or 64 objects
  // of 300 required properties, took seconds to minutes of the HTTP thread).
  void check_disjoint(const ordered_json& list, const std::string& at) {
    if (!list.is_array()) return;  // branches() names it
    const auto overlap = [&](size_t i, size_t j) {
      refuse(at, "has branches " + std::to_string(i) + " and " + std::to_string(j) +
                     " that one document may both match (a oneOf match must be unique; anyOf allows it)");
    };
    std::vector<Branch> branches;
    for (const auto& branch : list) branches.push_back(summary(resolve(branch)));
    if (std::all_of(branches.begin(), branches.end(), [](const Branch& b) { return b.values.has_value(); })) {
      std::unordered_map<std::string, size_t> owner;
      for (size_t i = 0; i < branches.size(); ++i)
        for (const std::string& v : *branches[i].values)
          if (const auto [it, added] = owner.emplace(v, i); !added) overlap(it->second, i);
      return;
    }
    constexpr size_t kMaxPairedBranches = 256;
    if (list.size() > kMaxPairedBranches)
      refuse(at, "has " + std::to_string(list.size()) + " branches: qinfer proves a oneOf's branches disjoint for " +
                     std::to_string(kMaxPairedBranches) +
                     " at most, unless every one is a const or an enum (anyOf has no such limit)");
    constexpr size_t kMaxWork = size_t{1} << 22;  // values looked up, over all pairs
    size_t work = 0;
    for (size_t i = 0; i < branches.size(); ++i)
      for (size_t j = i + 1; j < branches.size(); ++j) {
        if (!disjoint(branches[i], branches[j], work)) overlap(i, j);
        if (work > kMaxWork)
          refuse(at,
                 "has too many branches, or branches with too many required properties, to prove them disjoint: "
                 "use anyOf");
      }
  }
  // What tells a oneOf branch apart: its types, its values where it lists
  // them, and, for an object (nothing else), the listed values of each
  // property it requires (a discriminator's).
  struct Branch {
    std::set<std::string> types;
    std::optional<std::set<std::string>> values;
    bool object_only = false;
    std::map<std::string, std::set<std::string>> tags;
  };
  Branch summary(const ordered_json& s) {
    Branch b{types(s), listed(s), false, {}};
    if (!s.is_object() || !s.contains("properties") || !s["properties"].is_object() ||
        types_or_object(s) != std::set<std::string>{"object"})
      return b;
    b.object_only = true;
    if (!s.contains("required") || !s["required"].is_array()) return b;
    for (const auto& name : s["required"])
      if (name.is_string() && s["properties"].contains(name.get<std::string>()))
        if (auto values = listed(resolve(s["properties"][name.get<std::string>()])))
          b.tags.emplace(name.get<std::string>(), std::move(*values));
    return b;
  }
  const ordered_json& resolve(const ordered_json& s) {
    if (s.is_object() && s.contains("$ref") && s["$ref"].is_string())
      if (const ordered_json* target = lookup(s["$ref"].get<std::string>())) return *target;
    return s;
  }
  static std::set<std::string> types(const ordered_json& s) {
    std::set<std::string> out;
    if (!s.is_object()) return {"object", "array", "string", "number", "integer", "boolean", "null"};
    if (s.contains("const") || s.contains("enum")) {
      for (const auto& v : s.contains("const") ? ordered_json::array({s["const"]}) : s["enum"])
        for (const std::string& t : types_of(v)) out.insert(t);
      return out;
    }
    if (s.contains("type")) {
      for (const auto& t : s["type"].is_array() ? s["type"] : ordered_json::array({s["type"]}))
        if (t.is_string()) out.insert(t.get<std::string>());
      if (out.count("number")) out.insert("integer");
      return out;
    }
    return {"object", "array", "string", "number", "integer", "boolean", "null"};
  }
  // The values a schema allows, when it lists them (const / enum).
  static std::optional<std::set<std::string>> listed(const ordered_json& s) {
    if (!s.is_object() || !(s.contains("const") || s.contains("enum")) ||
        !s.value("enum", ordered_json::array()).is_array())
      return std::nullopt;
    std::set<std::string> out;
    for (const auto& v : s.contains("const") ? ordered_json::array({s["const"]}) : s["enum"]) out.insert(canonical(v));
    return out;  // with both, the const alone (values() refuses one not in the enum)
  }
  // Equal JSON values as JSON Schema compares them give equal texts: numbers
  // by value (1 and 1.0), object members in sorted order.
  static std::string canonical(const ordered_json& v) {
    if (v.is_number_integer()) return v.dump();  // exactly: beyond 2^53 a double would merge neighbours
    if (v.is_number()) {
      const double d = v.get<double>() + 0.0;  // + 0.0: -0 is 0
      if (d == std::floor(d) && std::fabs(d) < 9.2e18) return std::to_string(static_cast<int64_t>(d));  // 1.0 is 1
      return nlohmann::json(d).dump();
    }
    if (v.is_object()) {
      std::string out = "{";
      const nlohmann::json sorted = v;  // std::map: members by key
      for (const auto& [key, item] : sorted.items())
        out += nlohmann::json(key).dump() + ":" + canonical(ordered_json(item)) + ",";
      return out + "}";
    }
    if (v.is_array()) {
      std::string out = "[";
      for (const auto& item : v) out += canonical(item) + ",";
      return out + "]";
    }
    return v.dump();
  }
  // types(), where a schema without "type" but with properties is about objects.
  static std::set<std::string> types_or_object(const ordered_json& s) {
    if (!s.contains("type") && !s.contains("const") && !s.contains("enum")) return {"object"};
    return types(s);
  }
  static bool disjoint_sets(const std::set<std::string>& a, const std::set<std::string>& b) {
    const auto& [fewer, more] = a.size() <= b.size() ? std::tie(a, b) : std::tie(b, a);
    for (const std::string& x : fewer)
      if (more.count(x)) return false;
    return true;
  }
  bool disjoint(const Branch& a, const Branch& b, size_t& work) {
    if (disjoint_sets(a.types, b.types)) return true;
    if (a.values && b.values) {
      work += std::min(a.values->size(), b.values->size());
      return disjoint_sets(*a.values, *b.values);
    }
    // A discriminator separates objects only: both must be nothing else.
    if (!a.object_only || !b.object_only) return false;
    const Branch& fewer = a.tags.size() <= b.tags.size() ? a : b;
    const Branch& more = &fewer == &a ? b : a;
    for (const auto& [name, values] : fewer.tags) {
      const auto other = more.tags.find(name);
      work += 1 + (other == more.tags.end() ? 0 : std::min(values.size(), other->second.size()));
      if (other != more.tags.end() && disjoint_sets(values, other->second)) return true;
    }
    return false;
  }

  Expr typed(const std::string& type, const ordered_json& s, const std::string& at) {
    if (type == "object") return object(s, at);
    if (type == "array") return array(s, at);
    if (type == "string") return string(s, at);
    if (type == "number" || type == "integer") return number(type == "integer", s, at);
    if (type == "boolean") return json_.boolean();
    if (type == "null") return literal("null");
    refuse(at + "/type", "names no JSON Schema type: '" + excerpt(type) + "'");
  }

  // minLength / maxLength, and pattern or format (each with the length
  // bounds only where they cannot cut it).
  Expr string(const ordered_json& s, const std::string& at) {
    const uint32_t min = count(s, "minLength", at, 0);
    const uint32_t max = count(s, "maxLength", at, Expr::kUnbounded);
    if (max < min) refuse(at + "/maxLength", "is below minLength");
    if (s.contains("pattern")) {
      if (s.contains("format")) refuse(at + "/format", "beside pattern is not followed");
      if (!s["pattern"].is_string()) refuse(at + "/pattern", "must be a string");
      PatternGrammar p;
      try {
        p = pattern_contents(s["pattern"].get<std::string>(), json_.string_char());
      } catch (const Error& e) {
        refuse(at + "/pattern", std::string("is not followed: ") + e.what());
      }
      // Length bounds are followed where every match the pattern writes keeps them (Pydantic's
      // constr(pattern=..., max_length=...) with an anchored pattern).
      const std::string lengths = "this pattern's matches are " + std::to_string(p.min_length) + " to " +
                                  (p.max_length == kUnboundedLength ? "any number of" : std::to_string(p.max_length)) +
                                  " characters";
      if (p.min_length < min)
        refuse(at + "/minLength", "beside pattern is followed only when no match is shorter: " + lengths);
      if (max != Expr::kUnbounded && p.max_length > max)
        refuse(at + "/maxLength", "beside pattern is followed only when no match is longer: " + lengths);
      return sequence({byte('"'), std::move(p.contents), byte('"')});
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) refuse(at + "/format", "must be a string");
      const std::string name = s["format"].get<std::string>();
      auto format = string_format(name);
      if (!format)
        refuse(at + "/format", "names a format qinfer does not follow: '" + excerpt(name) + "' (it follows " +
                                   string_format_names() + ")");
      if (format->min_length < min)
        refuse(at + "/minLength", "is above the shortest " + name + " (" + std::to_string(format->min_length) +
                                      " characters): not followed");
      if (format->max_length > max)
        refuse(at + "/maxLength", "is below the longest " + name + " qinfer writes (" +
                                      std::to_string(format->max_length) + " characters): not followed");
      return sequence({byte('"'), std::move(format->contents), byte('"')});
    }
    return json_.string(min, max);
  }

  // A bound: minimum / maximum, exclusiveMinimum / exclusiveMaximum as a
  // number (or, as draft 4 wrote them, true beside minimum / maximum); the
  // tighter where both are given. Integers round fractional bounds inward;
  // numbers follow only integral ones.
  std::optional<NumberBound> bound(bool integer, bool lower, const ordered_json& s, const std::string& at) {
    const char* inclusive_key = lower ? "minimum" : "maximum";
    const char* exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::optional<NumberBound> tightest;
    for (const char* key : {inclusive_key, exclusive_key}) {
      if (!s.contains(key) || (s[key].is_boolean() && std::string_view(key) == exclusive_key)) continue;
      const auto& v = s[key];
      if (!v.is_number()) refuse(at + "/" + key, "must be a number");
      const double d = v.get<double>();
      if (!(std::fabs(d) <= 1e18)) refuse(at + "/" + key, "beyond +-10^18 is not followed");
      bool exclusive = std::string_view(key) == exclusive_key ||
                       (s.contains(exclusive_key) && s[exclusive_key].is_boolean() && s[exclusive_key].get<bool>());
      double edge = d;
      if (d != std::floor(d)) {
        if (!integer) refuse(at + "/" + key, "is followed for numbers only when it is an integer");
        edge = lower ? std::ceil(d) : std::floor(d);
        exclusive = false;
      }
      const NumberBound b{v.is_number_integer() && d == edge ? v.get<int64_t>() : static_cast<int64_t>(edge),
                          exclusive};
      const bool tighter = !tightest || (lower ? b.value > tightest->value : b.value < tightest->value) ||
                           (b.value == tightest->value && b.exclusive);
      if (tighter) tightest = b;
    }
    if (s.contains(exclusive_key) && s[exclusive_key].is_boolean() && !s.contains(inclusive_key))
      refuse(at + "/" + exclusive_key, std::string("as a boolean needs ") + inclusive_key + " beside it");
    return tightest;
  }

  Expr number(bool integer, const ordered_json& s, const std::string& at) {
    auto lower = bound(integer, true, s, at);
    auto upper = bound(integer, false, s, at);
    // OpenAPI's formats: int32 and int64 bound an integer (int64 as the
    // integers within +-10^18, the widest bounds qinfer follows: int64s all),
    // float and double a number (how it is stored: it bounds nothing). A
    // string's format says nothing about a number (a type list may hold both).
    if (s.contains("format") && s["format"].is_string()) {
      const std::string name = s["format"].get<std::string>();
      const int64_t limit = !integer          ? 0
                            : name == "int32" ? int64_t{1} << 31
                            : name == "int64" ? 1'000'000'000'000'000'000
                                              : 0;
      if (!limit && !(!integer && (name == "float" || name == "double")) && !string_format(name))
        refuse(at + "/format", "names a format qinfer does not follow for " +
                                   std::string(integer ? "integers (it follows int32 and int64)"
                                                       : "numbers (it follows float and double)") +
                                   ": '" + excerpt(name) + "'");
      if (limit && (!lower || lower->value < -limit)) lower = NumberBound{-limit, false};
      if (limit && (!upper || upper->value > limit - 1)) upper = NumberBound{limit - 1, false};
    }
    if (!lower && !upper) return integer ? json_.integer() : json_.number();
    try {
      return integer ? integers_between(lower, upper, kMaxIntegerDigits)
                     : numbers_between(lower, upper, kMaxIntegerDigits);
    } catch (const Error& e) {
      refuse(at, std::string("allows no value: ") + e.what());
    }
  }

  uint32_t count(const ordered_json& s, const char* key, const std::string& at, uint32_t absent) {
    if (!s.contains(key)) return absent;
    const auto& v = s[key];
    const double d = v.is_number() ? v.get<double>() : -1;
    if (d < 0 || d > 10000 || d != std::floor(d)) refuse(at + "/" + key, "must be an integer from 0 to 10000");
    return static_cast<uint32_t>(d);
  }

  Expr object(const ordered_json& s, const std::string& at) {
    const ordered_json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props && !props->is_object()) refuse(at + "/properties", "must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      const auto& list = s["required"];
      if (!list.is_array()) refuse(at + "/required", "must be an array of property names");
      for (const auto& name : list) {
        if (!name.is_string() || !props || !props->contains(name.get<std::string>()))
          refuse(at + "/required", "names " + excerpt(name.dump()) + ", which is not among the properties");
        required.insert(name.get<std::string>());
      }
    }
    // Members in the schema's order; a property whose schema is false is
    // never written (refused when required).
    struct Member {
      Expr text;
      bool required;
    };
    std::vector<Member> members;
    if (props)
      for (const auto& item : props->items()) {
        const std::string where = at + "/properties/" + pointer_token(item.key());
        if (item.value() == false) {
          if (required.count(item.key())) refuse(where, "is false but required: no document matches");
          continue;
        }
        const std::string key = ordered_json(item.key()).dump();
        members.push_back(
            {sequence({literal(key), json_.ws(), byte(':'), json_.ws(), compile(item.value(), where), json_.ws()}),
             required.count(item.key()) > 0});
      }
    if (members.empty()) {
      const ordered_json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if ((extra && extra->is_boolean() && !extra->get<bool>()) || (props && !props->empty()))
        return sequence({byte('{'), json_.ws(), byte('}')});
      if (extra && !extra->is_boolean()) return json_.map_of(compile(*extra, at + "/additionalProperties"));
      return json_.map_of(json_.value());
    }
    // rest[i][c]: the members from i on; c: whether one was written before
    // (then a ',' comes first). Optional members may be skipped. Each member
    // is a rule: rest[i][0] and rest[i][1] both refer to it.
    std::vector<Expr> text;
    for (Member& m : members) {
      const int32_t r = b_.new_anonymous_rule("member " + at);
      b_.define(r, std::move(m.text));
      text.push_back(GrammarBuilder::ref(r));
    }
    std::vector<std::array<int32_t, 2>> rest(members.size() + 1);
    for (auto& pair : rest)
      for (int32_t& r : pair) r = b_.new_anonymous_rule("members " + at);
    for (size_t i = members.size() + 1; i-- > 0;) {
      for (int c = 0; c < 2; ++c) {
        if (i == members.size()) {
          b_.define(rest[i][c], sequence({}));
          continue;
        }
        Expr take = sequence(
            {c ? sequence({byte(','), json_.ws()}) : sequence({}), text[i], GrammarBuilder::ref(rest[i + 1][1])});
        if (members[i].required)
          b_.define(rest[i][c], std::move(take));
        else
          b_.define(rest[i][c], choice({std::move(take), GrammarBuilder::ref(rest[i + 1][c])}));
      }
    }
    return sequence({byte('{'), json_.ws(), GrammarBuilder::ref(rest[0][0]), byte('}')});
  }

  Expr array(const ordered_json& s, const std::string& at) {
    const uint32_t min = count(s, "minItems", at, 0);
    const uint32_t max = count(s, "maxItems", at, Expr::kUnbounded);
    if (max < min) refuse(at + "/maxItems", "is below minItems");
    if (s.contains("items") && s["items"] == false) {  // no item may be written
      if (min > 0) refuse(at + "/items", "is false but minItems is above 0: no document matches");
      return sequence({byte('['), json_.ws(), byte(']')});
    }
    const Expr item = s.contains("items") ? compile(s["items"], at + "/items") : json_.value();
    if (min == 0 && max == Expr::kUnbounded) return json_.array_of(item);
    if (max == 0) return sequence({byte('['), json_.ws(), byte(']')});
    const int32_t r = b_.new_anonymous_rule("item " + at);
    b_.define(r, sequence({item, json_.ws()}));
    const Expr one = GrammarBuilder::ref(r);
    const Expr next = sequence({byte(','), json_.ws(), one});
    const uint32_t more = max == Expr::kUnbounded ? max : max - 1;
    Expr items =
        min == 0 ? optional(sequence({one, repeat(next, 0, more)})) : sequence({one, repeat(next, min - 1, more)});
    return sequence({byte('['), json_.ws(), std::move(items), byte(']')});
  }

  // The schema a local $ref points to ("#", "#/$defs/NAME",
  // "#/definitions/NAME"), or null.
  const ordered_json* lookup(const std::string& target) {
    if (target == "#") return &root_;
    for (const std::string section : {"$defs", "definitions"}) {
      const std::string prefix = "#/" + section + "/";
      if (target.rfind(prefix, 0) != 0) continue;
      const std::string name = decode_pointer_token(target.substr(prefix.size()));
      if (root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
        return &root_[section][name];
    }
    return nullptr;
  }

  Expr reference(const ordered_json& s, const std::string& at) {
    const auto& ref = s["$ref"];
    if (!ref.is_string()) refuse(at + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return GrammarBuilder::ref(it->second);
    const ordered_json* node = lookup(target);
    if (!node)
      refuse(at + "/$ref", "points to '" + excerpt(target) + "', which is not \"#\" or in this schema's $defs");
    const int32_t r = b_.new_anonymous_rule("$ref " + target);
    refs_[target] = r;
    b_.define(r, compile(*node, target.substr(1)));
    return GrammarBuilder::ref(r);
  }

  GrammarBuilder& b_;
  JsonRules json_;
  const ordered_json& root_;
  std::map<std::string, int32_t> refs_;
  int depth_ = 0;
};

Grammar build(GrammarBuilder& b, Expr root_expr) {
  const int32_t root = b.rule("root");
  b.define(root, std::move(root_expr));
  try {
    return std::move(b).build(root);
  } catch (const Error& e) {
    // Left recursion can only come from $ref: a schema that is its own first part.
    if (std::string(e.what()).find("left-recursive") != std::string::npos)
      fail("json_schema: a $ref leads back to itself before any byte is written (", e.what(), ")");
    throw;
  }
}

}  // namespace

Grammar json_object_grammar() {
  GrammarBuilder b;
  JsonRules json(b);
  return build(b, sequence({json.ws(), json.map_of(json.value())}));
}

Expr json_schema_expr(GrammarBuilder& b, const nlohmann::ordered_json& schema) {
  // Deeper documents are refused up front: values (enum, const) are written
  // and compared recursively.
  constexpr size_t kMaxDepth = 128;
  std::vector<std::pair<const ordered_json*, size_t>> todo{{&schema, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (depth > kMaxDepth) fail("json_schema: the schema nests deeper than ", kMaxDepth, " levels");
    if (v->is_structured())
      for (const auto& item : *v) todo.push_back({&item, depth + 1});
  }
  SchemaCompiler compiler(b, schema);
  Expr body = compiler.compile(schema, "");
  return sequence({compiler.json().ws(), std::move(body)});
}

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) {
  GrammarBuilder b;
  return build(b, json_schema_expr(b, schema));
}

}  // namespace qinfer::grammar
