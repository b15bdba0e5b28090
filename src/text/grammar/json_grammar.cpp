#include "text/grammar/json_grammar.h"

#include <array>
#include <map>
#include <set>

#include "util/error.h"

namespace qinfer::grammar {
namespace {

using nlohmann::ordered_json;

Expr byte(char c) { return bytes(ByteSet().set(static_cast<unsigned char>(c))); }

// The rules every JSON grammar shares: ws, value, object, array, string,
// number, integer and their parts.
struct JsonRules {
  GrammarBuilder& b;
  explicit JsonRules(GrammarBuilder& builder) : b(builder) {}

  Expr ws() {
    if (!defined("ws"))
      b.define(b.rule("ws"),
               optional(choice({byte(' '), sequence({byte('\n'), repeat(bytes(byte_class(" \t")), 0, 20)})})));
    return b.ref("ws");
  }
  // One character of a string's contents: printable ASCII but '"' and '\\',
  // an escape, or a well-formed multi-byte UTF-8 character.
  Expr string_char() {
    if (!defined("char")) {
      const Expr tail = bytes(byte_class("\x80-\xbf"));
      b.define(
          b.rule("char"),
          choice({bytes(byte_class(" -!#-[]-\x7f")),
                  sequence({byte('\\'), choice({bytes(byte_class("\"\\/bfnrt")),
                                                sequence({byte('u'), repeat(bytes(byte_class("0-9a-fA-F")), 4, 4)})})}),
                  sequence({bytes(byte_class("\xc2-\xdf")), tail}),
                  sequence({byte('\xe0'), bytes(byte_class("\xa0-\xbf")), tail}),
                  sequence({bytes(byte_class("\xe1-\xec\xee-\xef")), tail, tail}),
                  sequence({byte('\xed'), bytes(byte_class("\x80-\x9f")), tail}),
                  sequence({byte('\xf0'), bytes(byte_class("\x90-\xbf")), tail, tail}),
                  sequence({bytes(byte_class("\xf1-\xf3")), tail, tail, tail}),
                  sequence({byte('\xf4'), bytes(byte_class("\x80-\x8f")), tail, tail})}));
    }
    return b.ref("char");
  }
  Expr string(uint32_t min = 0, uint32_t max = Expr::kUnbounded) {
    if (min == 0 && max == Expr::kUnbounded) {
      if (!defined("string")) b.define(b.rule("string"), sequence({byte('"'), star(string_char()), byte('"')}));
      return b.ref("string");
    }
    return sequence({byte('"'), repeat(string_char(), min, max), byte('"')});
  }
  Expr integer() {
    if (!defined("integer"))
      b.define(b.rule("integer"), sequence({optional(byte('-')),
                                            choice({byte('0'), sequence({bytes(byte_class("1-9")), star(digit())})})}));
    return b.ref("integer");
  }
  Expr number() {
    if (!defined("number"))
      b.define(
          b.rule("number"),
          sequence(
              {integer(), optional(sequence({byte('.'), repeat(digit(), 1)})),
               optional(sequence({bytes(byte_class("eE")), optional(bytes(byte_class("-+"))), repeat(digit(), 1)}))}));
    return b.ref("number");
  }
  Expr digit() { return bytes(byte_class("0-9")); }
  Expr boolean() { return choice({literal("true"), literal("false")}); }
  // "{" members of (key, value) joined by ",", or "[" values joined by ",".
  Expr members(char open, char close, const Expr& member) {
    return sequence(
        {byte(open), ws(), optional(sequence({member, star(sequence({byte(','), ws(), member}))})), byte(close)});
  }
  Expr map_of(const Expr& value) { return members('{', '}', sequence({string(), ws(), byte(':'), ws(), value, ws()})); }
  Expr array_of(const Expr& item) { return members('[', ']', sequence({item, ws()})); }
  Expr value() {
    if (!defined("value")) {
      const int32_t r = b.rule("value");
      const Expr self = GrammarBuilder::ref(r);
      b.define(r, choice({map_of(self), array_of(self), string(), number(), boolean(), literal("null")}));
    }
    return b.ref("value");
  }

  bool defined(const char* name) {
    auto [it, added] = done_.insert(name);
    return !added;
  }
  std::set<std::string> done_;
};

// JSON Schema -> Expr, rule by rule for $defs (which may recurse).
class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& b, const ordered_json& root) : b_(b), json_(b), root_(root) {}
  JsonRules& json() { return json_; }

  Expr compile(const ordered_json& s, const std::string& at) {
    if (++depth_ > 64) refuse(at, "nests deeper than 64 levels");
    Expr e = compile_inner(s, at);
    --depth_;
    return e;
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
    static const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples",
                                                       "$schema",  "$id",         "$comment", "deprecated",
                                                       "readOnly", "writeOnly",   "$defs",    "definitions"};
    static const std::set<std::string> kHandled = {"type",      "properties", "required", "additionalProperties",
                                                   "items",     "minItems",   "maxItems", "minLength",
                                                   "maxLength", "enum",       "const",    "anyOf",
                                                   "oneOf",     "allOf",      "$ref"};
    for (const auto& item : s.items())
      if (!kAnnotations.count(item.key()) && !kHandled.count(item.key()))
        refuse(at + "/" + item.key(), "is a keyword this server does not follow (its output could break it)");

    for (const char* key : {"$ref", "anyOf", "oneOf", "allOf"})
      if (s.contains(key))
        for (const auto& item : s.items())
          if (item.key() != key && !kAnnotations.count(item.key()))
            refuse(at + "/" + item.key(), std::string("beside ") + key + " is not followed (only annotations may be)");
    if (s.contains("$ref")) return reference(s, at);
    if (s.contains("const")) return literal(s["const"].dump());
    if (s.contains("enum")) {
      const auto& values = s["enum"];
      if (!values.is_array() || values.empty()) refuse(at + "/enum", "must be a non-empty array");
      std::vector<Expr> alts;
      for (const auto& v : values) alts.push_back(literal(v.dump()));
      return choice(std::move(alts));
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        const auto& list = s[key];
        if (!list.is_array() || list.empty()) refuse(at + "/" + key, "must be a non-empty array");
        std::vector<Expr> alts;
        for (size_t i = 0; i < list.size(); ++i)
          alts.push_back(compile(list[i], at + "/" + key + "/" + std::to_string(i)));
        return choice(std::move(alts));
      }
    if (s.contains("allOf")) {
      const auto& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) refuse(at + "/allOf", "is followed only with exactly one schema");
      return compile(list[0], at + "/allOf/0");
    }
    if (!s.contains("type")) {
      if (s.contains("properties")) return object(s, at);
      if (s.contains("items")) return array(s, at);
      return json_.value();
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

  Expr typed(const std::string& type, const ordered_json& s, const std::string& at) {
    if (type == "object") return object(s, at);
    if (type == "array") return array(s, at);
    if (type == "string") {
      const uint32_t min = count(s, "minLength", at, 0);
      const uint32_t max = count(s, "maxLength", at, Expr::kUnbounded);
      if (max < min) refuse(at + "/maxLength", "is below minLength");
      return json_.string(min, max);
    }
    if (type == "number") return json_.number();
    if (type == "integer") return json_.integer();
    if (type == "boolean") return json_.boolean();
    if (type == "null") return literal("null");
    refuse(at + "/type", "names no JSON Schema type: '" + type + "'");
  }

  uint32_t count(const ordered_json& s, const char* key, const std::string& at, uint32_t absent) {
    if (!s.contains(key)) return absent;
    const auto& v = s[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > 10000)
      refuse(at + "/" + key, "must be an integer from 0 to 10000");
    return static_cast<uint32_t>(v.get<uint64_t>());
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
          refuse(at + "/required", "names " + name.dump() + ", which is not among the properties");
        required.insert(name.get<std::string>());
      }
    }
    if (!props || props->empty()) {
      const ordered_json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if (extra && extra->is_boolean() && !extra->get<bool>()) return literal("{}");
      if (extra && !extra->is_boolean()) return json_.map_of(compile(*extra, at + "/additionalProperties"));
      return json_.map_of(json_.value());
    }
    // rest[i][c]: the members from i on; c: whether one was written before
    // (then a ',' comes first). Optional members may be skipped.
    struct Member {
      Expr text;
      bool required;
    };
    std::vector<Member> members;
    for (const auto& item : props->items()) {
      const std::string key = ordered_json(item.key()).dump();
      members.push_back({sequence({literal(key), json_.ws(), byte(':'), json_.ws(),
                                   compile(item.value(), at + "/properties/" + item.key()), json_.ws()}),
                         required.count(item.key()) > 0});
    }
    const std::string base = "object-" + std::to_string(objects_++);
    std::vector<std::array<int32_t, 2>> rest(members.size() + 1);
    for (size_t i = 0; i <= members.size(); ++i)
      for (int c = 0; c < 2; ++c) rest[i][c] = b_.rule(base + "-" + std::to_string(i) + "-" + std::to_string(c));
    for (size_t i = members.size() + 1; i-- > 0;) {
      for (int c = 0; c < 2; ++c) {
        if (i == members.size()) {
          b_.define(rest[i][c], sequence({}));
          continue;
        }
        Expr take = sequence({c ? sequence({byte(','), json_.ws()}) : sequence({}), members[i].text,
                              GrammarBuilder::ref(rest[i + 1][1])});
        if (members[i].required)
          b_.define(rest[i][c], std::move(take));
        else
          b_.define(rest[i][c], choice({std::move(take), GrammarBuilder::ref(rest[i + 1][c])}));
      }
    }
    return sequence({byte('{'), json_.ws(), GrammarBuilder::ref(rest[0][0]), byte('}')});
  }

  Expr array(const ordered_json& s, const std::string& at) {
    const Expr item = s.contains("items") ? compile(s["items"], at + "/items") : json_.value();
    const uint32_t min = count(s, "minItems", at, 0);
    const uint32_t max = count(s, "maxItems", at, Expr::kUnbounded);
    if (max < min) refuse(at + "/maxItems", "is below minItems");
    if (min == 0 && max == Expr::kUnbounded) return json_.array_of(item);
    const Expr one = sequence({item, json_.ws()});
    const Expr next = sequence({byte(','), json_.ws(), one});
    Expr items = min == 0 ? optional(sequence({one, repeat(next, 0, max == Expr::kUnbounded ? max : max - 1)}))
                          : sequence({one, repeat(next, min - 1, max == Expr::kUnbounded ? max : max - 1)});
    if (max == 0) items = sequence({});
    return sequence({byte('['), json_.ws(), std::move(items), byte(']')});
  }

  Expr reference(const ordered_json& s, const std::string& at) {
    const auto& ref = s["$ref"];
    if (!ref.is_string()) refuse(at + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return GrammarBuilder::ref(it->second);
    const ordered_json* node = nullptr;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (target.rfind(p, 0) == 0) {
        const std::string name = target.substr(p.size());
        const std::string section = p.substr(2, p.size() - 3);
        if (root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
          node = &root_[section][name];
      }
    }
    if (target == "#") node = &root_;
    if (!node) refuse(at + "/$ref", "points to '" + target + "', which is not \"#\" or in this schema's $defs");
    const int32_t r = b_.rule("ref " + target);
    refs_[target] = r;
    b_.define(r, compile(*node, target.substr(1)));
    return GrammarBuilder::ref(r);
  }

  GrammarBuilder& b_;
  JsonRules json_;
  const ordered_json& root_;
  std::map<std::string, int32_t> refs_;
  int objects_ = 0, depth_ = 0;
};

}  // namespace

Grammar json_object_grammar() {
  GrammarBuilder b;
  JsonRules json(b);
  const int32_t root = b.rule("root");
  b.define(root, sequence({json.ws(), json.map_of(json.value())}));
  return std::move(b).build(root);
}

Expr json_schema_expr(GrammarBuilder& b, const nlohmann::ordered_json& schema) {
  SchemaCompiler compiler(b, schema);
  Expr body = compiler.compile(schema, "");
  return sequence({compiler.json().ws(), std::move(body)});
}

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  b.define(root, json_schema_expr(b, schema));
  return std::move(b).build(root);
}

}  // namespace qinfer::grammar
