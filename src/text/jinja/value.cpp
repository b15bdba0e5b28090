#include "text/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/pystring.h"
#include "util/utf8.h"

namespace qinfer::jinja {

std::string int_to_string(Int i) {
  std::string digits = int_digits(i, 10);
  if (i < 0) digits.insert(0, 1, '-');  // not "-" + digits: GCC 12 warns (-Wrestrict, falsely)
  return digits;
}

std::string int_digits(Int i, int base, bool upper) {
  const char* symbols = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  auto u =
      i < 0 ? static_cast<unsigned __int128>(0) - static_cast<unsigned __int128>(i) : static_cast<unsigned __int128>(i);
  std::string digits;
  do {
    digits += symbols[static_cast<int>(u % static_cast<unsigned>(base))];
    u /= static_cast<unsigned>(base);
  } while (u != 0);
  return {digits.rbegin(), digits.rend()};
}

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* ObjectData::find(const std::string& name) const {
  for (const auto& [k, v] : attrs)
    if (k == name) return &v;
  return nullptr;
}

void ObjectData::set(const std::string& name, Value value) {
  for (auto& [k, v] : attrs) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(name, std::move(value));
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  RenderBudget::check_list(static_cast<double>(items.size()));
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->is_tuple = is_tuple;
  return Value(std::shared_ptr<const ListData>(std::move(data)));
}

Value Value::dict(DictData d) {
  return Value(std::shared_ptr<const DictData>(std::make_shared<DictData>(std::move(d))));
}

Value Value::function(std::string name, std::function<Value(CallArgs&)> call) {
  return Value(std::shared_ptr<const FunctionData>(
      std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(call)})));
}

Value Value::generator(std::vector<Value> items, std::string function, std::string type_name) {
  RenderBudget::check_list(static_cast<double>(items.size()));
  auto g = std::make_shared<GeneratorData>();
  g->type_name = std::move(type_name);
  g->function = std::move(function);
  g->items = std::move(items);
  return Value(std::move(g));
}

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_float() != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !as_list().items.empty();
  if (is_dict()) return !as_dict().entries.empty();
  return true;
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return as_list().is_tuple ? "tuple" : "list";
  if (is_dict()) return "dict";
  if (is_object()) return as_object().type_name;
  if (is_generator()) return as_generator().type_name;
  return "function";
}

std::string Value::object_description() const { return is_none() ? "None" : type_name() + " object"; }

namespace {

std::string sequence_repr(const std::vector<Value>& items, const char* open, const char* close) {
  NestedValueLevel level;
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr(items[i]);
    RenderBudget::check_string(static_cast<double>(out.size()));
  }
  return out.append(close);
}

std::string dict_repr(const std::vector<std::pair<Value, Value>>& entries) {
  NestedValueLevel level;
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ", ";
    out += repr(entries[i].first) + ": " + repr(entries[i].second);
    RenderBudget::check_string(static_cast<double>(out.size()));
  }
  return out + "}";
}

}  // namespace

std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (v.is_string()) return v.as_string();
  return repr(v);
}

std::string repr(const Value& v) {
  if (v.is_undefined()) return "Undefined";
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return int_to_string(v.as_int());
  if (v.is_float()) return py_float_repr(v.as_float());
  if (v.is_string()) return py_str_repr(v.as_string());
  if (v.is_list()) {
    const ListData& l = v.as_list();
    if (!l.is_tuple) return sequence_repr(l.items, "[", "]");
    return sequence_repr(l.items, "(", l.items.size() == 1 ? ",)" : ")");
  }
  if (v.is_dict()) return dict_repr(v.as_dict().entries);
  if (v.is_object()) {
    const ObjectData& o = v.as_object();
    if (o.type_name == "LoopContext") {
      return "<LoopContext " + to_str(*o.find("index")) + "/" + to_str(*o.find("length")) + ">";
    }
    std::vector<std::pair<Value, Value>> entries;
    for (const auto& [k, val] : o.attrs) entries.emplace_back(Value(k), val);
    return "<" + o.type_name + " " + dict_repr(entries) + ">";
  }
  if (v.is_generator()) {
    const GeneratorData& g = v.as_generator();
    return "<" + g.type_name + " object" + (g.function.empty() ? "" : " " + g.function) + ">";
  }
  return "<function " + v.as_function().name + ">";
}

namespace {

template <class T>
std::partial_ordering order(const T& a, const T& b) {
  if (a < b) return std::partial_ordering::less;
  if (b < a) return std::partial_ordering::greater;
  return a == b ? std::partial_ordering::equivalent : std::partial_ordering::unordered;
}

// Python compares int with float exactly (2**64 != float(2**64 + 1)).
std::partial_ordering compare_numbers(const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) return order(a.integral(), b.integral());
  if (a.is_float() && b.is_float()) return order(a.as_float(), b.as_float());
  const bool flipped = a.is_float();
  const Int i = flipped ? b.integral() : a.integral();
  const double f = flipped ? a.as_float() : b.as_float();
  std::partial_ordering c = std::partial_ordering::unordered;
  if (std::isnan(f)) return c;
  if (f >= 0x1p127) {
    c = std::partial_ordering::less;
  } else if (f < -0x1p127) {
    c = std::partial_ordering::greater;
  } else {
    const double whole = std::trunc(f);
    const auto fi = static_cast<Int>(whole);
    c = i != fi ? order(i, fi) : order(whole, f);
  }
  return flipped ? 0 <=> c : c;
}

}  // namespace

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() && std::isnan(a.as_float())) return false;
    if (b.is_float() && std::isnan(b.as_float())) return false;
    return compare_numbers(a, b) == 0;
  }
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  if (a.is_list() && b.is_list()) {
    const ListData& x = a.as_list();
    const ListData& y = b.as_list();
    if (&x == &y) return true;  // as Python's list ==, which takes identity for equality first
    NestedValueLevel level;
    if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
    for (size_t i = 0; i < x.items.size(); ++i)
      if (!equals(x.items[i], y.items[i])) return false;
    return true;
  }
  if (a.is_dict() && b.is_dict()) {
    const DictData& x = a.as_dict();
    const DictData& y = b.as_dict();
    if (&x == &y) return true;
    NestedValueLevel level;
    if (x.entries.size() != y.entries.size()) return false;
    for (const auto& [k, v] : x.entries) {
      const Value* other = y.find(k);
      if (!other || !equals(v, *other)) return false;
    }
    return true;
  }
  if (a.is_object() && b.is_object()) return &a.as_object() == &b.as_object();
  if (a.is_function() && b.is_function()) return &a.as_function() == &b.as_function();
  if (a.is_generator() && b.is_generator()) return &a.as_generator() == &b.as_generator();
  return false;
}

std::partial_ordering compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b);
  // UTF-8 byte order is code point order, which is how Python orders str.
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) <=> 0;
  if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
    NestedValueLevel level;
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return compare(x[i], y[i]);
    return x.size() <=> y.size();
  }
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  eval_fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

std::vector<Value> iterate(const Value& v) {
  if (v.is_undefined()) return {};
  if (v.is_list()) return v.as_list().items;
  if (v.is_dict()) {
    std::vector<Value> keys;
    for (const auto& entry : v.as_dict().entries) keys.push_back(entry.first);
    return keys;
  }
  if (v.is_string()) {
    std::vector<Value> chars;
    for (char32_t c : decode_utf8(v.as_string())) chars.emplace_back(encode_utf8(std::u32string(1, c)));
    return chars;
  }
  if (v.is_generator()) {
    GeneratorData& g = v.as_generator();
    if (!g.error.empty()) throw EvalError(g.error);
    std::vector<Value> rest(g.items.begin() + static_cast<std::ptrdiff_t>(g.next), g.items.end());
    g.next = g.items.size();
    return rest;
  }
  eval_fail("'", v.type_name(), "' object is not iterable");
}

int64_t length(const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_string()) return static_cast<int64_t>(count_code_points(v.as_string()));
  if (v.is_list()) return static_cast<int64_t>(v.as_list().items.size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().entries.size());
  eval_fail("object of type '", v.type_name(), "' has no len()");
}

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : decode_utf8(s)) {
    char buf[16];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7E && c < 0x10000)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else if (ensure_ascii && c >= 0x10000) {
          char32_t u = c - 0x10000;
          std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (u >> 10)),
                        static_cast<unsigned>(0xDC00 + (u & 0x3FF)));
          out += buf;
        } else {
          utf8::append_code_point(out, c);
        }
    }
  }
  out += '"';
}

std::string json_float(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(x);
}

// Python converts non-str dict keys to their JSON text.
std::string json_key(const Value& k) {
  if (k.is_string()) return k.as_string();
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_int()) return int_to_string(k.as_int());
  if (k.is_float()) return json_float(k.as_float());
  if (k.is_none()) return "null";
  eval_fail("keys must be str, int, float, bool or None, not ", k.type_name());
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options) : o_(options) {}

  void write(const Value& v, int depth) {
    if (v.is_none()) {
      out += "null";
    } else if (v.is_bool()) {
      out += v.as_bool() ? "true" : "false";
    } else if (v.is_int()) {
      out += int_to_string(v.as_int());
    } else if (v.is_float()) {
      out += json_float(v.as_float());
    } else if (v.is_string()) {
      append_json_string(out, v.as_string(), o_.ensure_ascii);
    } else if (v.is_list()) {
      NestedValueLevel level;
      const auto& items = v.as_list().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        separate(i, depth + 1);
        write(items[i], depth + 1);
        RenderBudget::check_string(static_cast<double>(out.size()));
      }
      close(depth);
      out += ']';
    } else if (v.is_dict()) {
      NestedValueLevel level;
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, val] : v.as_dict().entries) entries.emplace_back(json_key(k), &val);
      if (o_.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      if (entries.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        separate(i, depth + 1);
        append_json_string(out, entries[i].first, o_.ensure_ascii);
        out += o_.key_separator;
        write(*entries[i].second, depth + 1);
        RenderBudget::check_string(static_cast<double>(out.size()));
      }
      close(depth);
      out += '}';
    } else {
      eval_fail("Object of type ", v.type_name(), " is not JSON serializable");
    }
  }

  std::string out;

 private:
  void separate(size_t index, int depth) {
    if (index) out += o_.item_separator;
    newline(depth);
  }
  void close(int depth) { newline(depth); }
  void newline(int depth) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *o_.indent;
  }

  const JsonDumpOptions& o_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  JsonWriter w(options);
  w.write(v, 0);
  return std::move(w.out);
}

namespace {

// Deeper input would risk the C++ stack in the recursive value functions.
constexpr int kMaxJsonDepth = 256;

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth) fail("JSON input nested deeper than ", kMaxJsonDepth, " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value(None{});
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(j.get<uint64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictData d;
      d.entries.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.entries.emplace_back(Value(k), from_json_at(e, depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      fail("JSON value of type ", j.type_name(), " cannot be used in a template");
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace qinfer::jinja
