#include "text/jinja/builtin_methods.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "text/jinja/budget.h"
#include "text/jinja/builtin_args.h"
#include "text/jinja/format_spec.h"
#include "text/jinja/pystring.h"
#include "text/jinja/unicode_chars.h"
#include "util/utf8.h"

namespace qinfer::jinja {

// str.islower() / str.isupper(): no cased character of the other case (a
// titlecase letter counts as neither), and at least one of this case.
Value case_test(const std::string& self, bool want_lower) {
  bool cased = false;
  for (char32_t c : decode_utf8(self)) {
    if (is_py_title(c) || (want_lower ? is_py_upper(c) : is_py_lower(c))) return false;
    cased = cased || (want_lower ? is_py_lower(c) : is_py_upper(c));
  }
  return cased;
}

// str.istitle(): upper- or titlecase characters only where no cased one
// precedes them, lowercase ones only where one does, and at least one.
Value title_test(const std::string& self) {
  bool cased = false, previous_is_cased = false;
  for (char32_t c : decode_utf8(self)) {
    if (is_py_upper(c) || is_py_title(c)) {
      if (previous_is_cased) return false;
      previous_is_cased = cased = true;
    } else if (is_py_lower(c)) {
      if (!previous_is_cased) return false;
      previous_is_cased = cased = true;
    } else {
      previous_is_cased = false;
    }
  }
  return cased;
}

Value justify(const char* name, const std::string& self, CallArgs& args, int where) {
  Params p(name, args, {"width", "fillchar"});
  int64_t width = p.integer(0, 0);
  std::string fill = p.string(1).value_or(" ");
  if (count_code_points(fill) != 1) eval_fail("The fill character must be exactly one character long");
  auto n = static_cast<int64_t>(count_code_points(self));
  if (width <= n) return self;
  RenderBudget::check_string(static_cast<double>(width));
  int64_t total = width - n;
  // str.center puts the extra character on the left when width is odd.
  int64_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self;
  for (int64_t i = left; i < total; ++i) out += fill;
  return out;
}

namespace {

// ---- str.format("{} {name!r:>8}", ...) ----

std::string brace_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}')
        ++i;
      else
        eval_fail("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) eval_fail("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    // field_name ["!" conversion] [":" format_spec]
    std::string spec;
    char conversion = 0;
    const size_t name_end = std::min(field.find_first_of("!:"), field.size());
    if (name_end < field.size() && field[name_end] == '!') {
      if (name_end + 1 >= field.size()) eval_fail("end of string while looking for conversion specifier");
      conversion = field[name_end + 1];
      if (name_end + 2 < field.size() && field[name_end + 2] != ':')
        eval_fail("expected ':' after conversion specifier");
      if (name_end + 2 < field.size()) spec = field.substr(name_end + 3);
    } else if (name_end < field.size()) {
      spec = field.substr(name_end + 1);
    }
    field.resize(name_end);
    if (field.find_first_of(".[") != std::string::npos)
      eval_fail("attribute and item lookups in str.format fields are not supported");
    if (spec.find('{') != std::string::npos) eval_fail("nested fields in str.format specs are not supported");
    const Value* arg = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      size_t index = 0;
      for (char d : field)  // Python's limit; std::stoul would throw past size_t
        if (__builtin_mul_overflow(index, 10, &index) || __builtin_add_overflow(index, d - '0', &index) ||
            index > static_cast<size_t>(INT64_MAX))
          eval_fail("Too many decimal digits in format string");
      if (field.empty()) index = auto_index++;
      if (index >= args.positional.size())
        eval_fail("Replacement index ", index, " out of range for positional args tuple");
      arg = &args.positional[index];
    } else {
      for (const auto& [k, v] : args.keywords)
        if (k == field) arg = &v;
      if (!arg) eval_fail("KeyError: '", field, "'");
    }
    if (conversion == 'r')
      out += format_with_spec(Value(repr(*arg)), spec);
    else if (conversion == 's')
      out += format_with_spec(Value(to_str(*arg)), spec);
    else if (conversion == 0)
      out += format_with_spec(*arg, spec);
    else
      eval_fail("Unknown conversion specifier ", conversion);
  }
  return out;
}

using StrMethod = Value (*)(const std::string& self, CallArgs& args);

// Python's start/end arguments of find/count/startswith: a code point range.
std::string sub_range(const std::string& self, const Params& p, size_t start_param, int64_t* offset) {
  *offset = 0;
  if (!p.given(start_param) && !p.given(start_param + 1)) return self;
  std::u32string cs = decode_utf8(self);
  auto n = static_cast<int64_t>(cs.size());
  std::optional<int64_t> lo, hi;
  if (p.given(start_param)) lo = p.integer(start_param, 0);
  if (p.given(start_param + 1)) hi = p.integer(start_param + 1, n);
  SliceBounds b = slice_bounds(lo, hi, 1, n);
  *offset = b.start;
  return b.stop > b.start ? encode_utf8(std::u32string_view(cs).substr(b.start, b.stop - b.start)) : "";
}

Value affix_test(const char* name, const std::string& self, CallArgs& args, bool prefix) {
  Params p(name, args, {"affix", "start", "end"});
  int64_t offset = 0;
  std::string s = sub_range(self, p, 1, &offset);
  if (p.has(1) && p.given(1) && p.integer(1, 0) > static_cast<int64_t>(count_code_points(self))) return false;
  const Value& affix = p.required(0);
  std::vector<Value> options =
      affix.is_list() && affix.as_list().is_tuple ? affix.as_list().items : std::vector<Value>{affix};
  for (const Value& o : options) {
    if (!o.is_string()) eval_fail(name, " first arg must be str or a tuple of str, not ", o.type_name());
    const std::string& a = o.as_string();
    bool hit = a.size() <= s.size() &&
               (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0);
    if (hit) return true;
  }
  return false;
}

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& s : parts) items.emplace_back(std::move(s));
  return Value::list(std::move(items));
}

Value split_method(const char* name, const std::string& self, CallArgs& args, bool from_right) {
  Params p(name, args, {"sep", "maxsplit"});
  std::optional<std::string> sep = p.string(0);
  if (sep && sep->empty()) eval_fail("empty separator");
  return str_list(py_split(self, sep, p.integer(1, -1), from_right));
}

Value strip_method(const char* name, const std::string& self, CallArgs& args, bool left, bool right) {
  Params p(name, args, {"chars"});
  return py_strip(self, p.string(0), left, right);
}

// find/rfind/index/rindex/count in code points.
Value search_method(const char* name, const std::string& self, CallArgs& args) {
  Params p(name, args, {"sub", "start", "end"});
  const std::string& sub = need_string(p.required(0), "substring");
  int64_t offset = 0;
  std::string s = sub_range(self, p, 1, &offset);
  std::string_view n(name);
  if (n == "count") {
    if (sub.empty()) return static_cast<int64_t>(count_code_points(s)) + 1;
    int64_t count = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++count;
    return count;
  }
  bool reverse = n == "rfind" || n == "rindex";
  size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    if (n == "index" || n == "rindex") eval_fail("substring not found");
    return -1;
  }
  return offset + static_cast<int64_t>(count_code_points(std::string_view(s).substr(0, at)));
}

// str.isdigit() and kin: every character passes, and there is at least one
// (or, for isascii/isprintable, none is needed).
Value all_chars(const std::string& self, bool (*pred)(char32_t), bool empty_passes = false) {
  std::u32string cs = decode_utf8(self);
  return (empty_passes || !cs.empty()) && std::all_of(cs.begin(), cs.end(), pred);
}

Value identifier_test(const std::string& self) {
  std::u32string cs = decode_utf8(self);
  return !cs.empty() && is_py_identifier_start(cs[0]) &&
         std::all_of(cs.begin() + 1, cs.end(), is_py_identifier_continue);
}

Value remove_affix(const char* name, const std::string& self, CallArgs& args, bool prefix) {
  Params p(name, args, {"affix"});
  const Value& affix = p.required(0);
  if (!affix.is_string()) eval_fail(name, "() argument must be str, not ", affix.type_name());
  const std::string& a = affix.as_string();
  if (a.size() > self.size()) return self;
  if (prefix) return self.compare(0, a.size(), a) == 0 ? self.substr(a.size()) : self;
  return self.compare(self.size() - a.size(), a.size(), a) == 0 ? self.substr(0, self.size() - a.size()) : self;
}

// str.expandtabs(tabsize=8): the column restarts after '\n' and '\r'.
Value expand_tabs(const std::string& self, CallArgs& args) {
  Params p("expandtabs", args, {"tabsize"});
  const int64_t tab_size = p.integer(0, 8);
  std::string out;
  int64_t column = 0;
  for (char32_t c : decode_utf8(self)) {
    if (c == '\t') {
      if (tab_size > 0) {
        const int64_t spaces = tab_size - column % tab_size;
        RenderBudget::check_string(static_cast<double>(out.size()) + static_cast<double>(spaces));
        out.append(static_cast<size_t>(spaces), ' ');
        column += spaces;
      }
    } else {
      utf8::append_code_point(out, c);
      column = (c == '\n' || c == '\r') ? 0 : column + 1;
    }
  }
  return out;
}

Value partition(const std::string& self, CallArgs& args, bool from_right) {
  Params p(from_right ? "rpartition" : "partition", args, {"sep"});
  const std::string& sep = need_string(p.required(0), "separator");
  if (sep.empty()) eval_fail("empty separator");
  size_t at = from_right ? self.rfind(sep) : self.find(sep);
  if (at == std::string::npos)
    return from_right ? Value::list({"", "", self}, true) : Value::list({self, "", ""}, true);
  return Value::list({self.substr(0, at), sep, self.substr(at + sep.size())}, true);
}

using NoArgStrMethod = Value (*)(const std::string& self);

// str methods that take no arguments: str.upper() and the str.is...() tests.
const std::unordered_map<std::string, NoArgStrMethod>& no_arg_str_methods() {
  static const std::unordered_map<std::string, NoArgStrMethod> methods = {
      {"upper", [](const std::string& s) { return Value(py_upper(s)); }},
      {"lower", [](const std::string& s) { return Value(py_lower(s)); }},
      {"casefold", [](const std::string& s) { return Value(py_casefold(s)); }},
      {"swapcase", [](const std::string& s) { return Value(py_swapcase(s)); }},
      {"capitalize", [](const std::string& s) { return Value(py_capitalize(s)); }},
      {"title", [](const std::string& s) { return Value(py_title(s)); }},
      {"islower", [](const std::string& s) { return case_test(s, true); }},
      {"isupper", [](const std::string& s) { return case_test(s, false); }},
      {"istitle", [](const std::string& s) { return title_test(s); }},
      {"isidentifier", [](const std::string& s) { return identifier_test(s); }},
      {"isdigit", [](const std::string& s) { return all_chars(s, is_py_digit); }},
      {"isdecimal", [](const std::string& s) { return all_chars(s, is_py_decimal); }},
      {"isnumeric", [](const std::string& s) { return all_chars(s, is_py_numeric); }},
      {"isalpha", [](const std::string& s) { return all_chars(s, is_py_alpha); }},
      {"isalnum", [](const std::string& s) { return all_chars(s, is_py_alnum); }},
      {"isspace", [](const std::string& s) { return all_chars(s, is_py_space); }},
      {"isprintable", [](const std::string& s) { return all_chars(s, is_py_printable, true); }},
      {"isascii",
       [](const std::string& s) {
         return all_chars(
             s, [](char32_t c) { return c < 0x80; }, true);
       }},
  };
  return methods;
}

const std::unordered_map<std::string, StrMethod>& str_methods() {
  static const std::unordered_map<std::string, StrMethod> methods = {
      {"startswith", [](const std::string& s, CallArgs& a) { return affix_test("startswith", s, a, true); }},
      {"endswith", [](const std::string& s, CallArgs& a) { return affix_test("endswith", s, a, false); }},
      {"split", [](const std::string& s, CallArgs& a) { return split_method("split", s, a, false); }},
      {"rsplit", [](const std::string& s, CallArgs& a) { return split_method("rsplit", s, a, true); }},
      {"splitlines",
       [](const std::string& s, CallArgs& a) {
         Params p("splitlines", a, {"keepends"});
         return str_list(py_splitlines(s, p.flag(0, false)));
       }},
      {"strip", [](const std::string& s, CallArgs& a) { return strip_method("strip", s, a, true, true); }},
      {"lstrip", [](const std::string& s, CallArgs& a) { return strip_method("lstrip", s, a, true, false); }},
      {"rstrip", [](const std::string& s, CallArgs& a) { return strip_method("rstrip", s, a, false, true); }},
      {"replace",
       [](const std::string& s, CallArgs& a) {
         Params p("replace", a, {"old", "new", "count"});
         return Value(
             py_replace(s, need_string(p.required(0), "old"), need_string(p.required(1), "new"), p.integer(2, -1)));
       }},
      {"find", [](const std::string& s, CallArgs& a) { return search_method("find", s, a); }},
      {"rfind", [](const std::string& s, CallArgs& a) { return search_method("rfind", s, a); }},
      {"index", [](const std::string& s, CallArgs& a) { return search_method("index", s, a); }},
      {"rindex", [](const std::string& s, CallArgs& a) { return search_method("rindex", s, a); }},
      {"count", [](const std::string& s, CallArgs& a) { return search_method("count", s, a); }},
      {"join",
       [](const std::string& s, CallArgs& a) {
         Params p("join", a, {"iterable"});
         std::string out;
         size_t i = 0;
         for (const Value& item : iterate(p.required(0))) {
           if (!item.is_string())
             eval_fail("sequence item ", i, ": expected str instance, ", item.type_name(), " found");
           if (i++) out += s;
           out += item.as_string();
           RenderBudget::check_string(static_cast<double>(out.size()));
         }
         return Value(std::move(out));
       }},
      {"removeprefix", [](const std::string& s, CallArgs& a) { return remove_affix("removeprefix", s, a, true); }},
      {"removesuffix", [](const std::string& s, CallArgs& a) { return remove_affix("removesuffix", s, a, false); }},
      {"expandtabs", [](const std::string& s, CallArgs& a) { return expand_tabs(s, a); }},
      {"center", [](const std::string& s, CallArgs& a) { return justify("center", s, a, 0); }},
      {"ljust", [](const std::string& s, CallArgs& a) { return justify("ljust", s, a, -1); }},
      {"rjust", [](const std::string& s, CallArgs& a) { return justify("rjust", s, a, 1); }},
      {"zfill",
       [](const std::string& s, CallArgs& a) {
         Params p("zfill", a, {"width"});
         int64_t width = p.integer(0, 0);
         auto n = static_cast<int64_t>(count_code_points(s));
         if (width <= n) return Value(s);
         RenderBudget::check_string(static_cast<double>(width));
         size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
         return Value(s.substr(0, sign) + std::string(static_cast<size_t>(width - n), '0') + s.substr(sign));
       }},
      {"partition", [](const std::string& s, CallArgs& a) { return partition(s, a, false); }},
      {"rpartition", [](const std::string& s, CallArgs& a) { return partition(s, a, true); }},
      {"format", [](const std::string& s, CallArgs& a) { return Value(brace_format(s, a)); }},
  };
  return methods;
}

std::optional<Value> dict_method(const Value& self, const std::string& name) {
  auto entries = [self](bool keys, bool values) {
    std::vector<Value> out;
    for (const auto& [k, v] : self.as_dict().entries) {
      if (keys && values)
        out.push_back(Value::list({k, v}, true));
      else
        out.push_back(keys ? k : v);
    }
    return Value::list(std::move(out));
  };
  if (name == "items")
    return Value::function("dict.items", [entries](CallArgs& a) {
      Params("items", a, {});
      return entries(true, true);
    });
  if (name == "keys")
    return Value::function("dict.keys", [entries](CallArgs& a) {
      Params("keys", a, {});
      return entries(true, false);
    });
  if (name == "values")
    return Value::function("dict.values", [entries](CallArgs& a) {
      Params("values", a, {});
      return entries(false, true);
    });
  if (name == "get")
    return Value::function("dict.get", [self](CallArgs& a) {
      Params p("get", a, {"key", "default"});
      const Value* v = self.as_dict().find(p.required(0));
      return v ? *v : p.get(1, Value(None{}));
    });
  return std::nullopt;
}

std::optional<Value> list_method(const Value& self, const std::string& name) {
  const ListData& list = self.as_list();
  for (size_t i = 0; i < list.field_names.size() && i < list.items.size(); ++i)
    if (list.field_names[i] == name) return list.items[i];
  if (name == "index")
    return Value::function("list.index", [self](CallArgs& a) {
      Params p("index", a, {"value"});
      const auto& items = self.as_list().items;
      for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], p.required(0))) return Value(static_cast<int64_t>(i));
      eval_fail(repr(p.required(0)), " is not in list");
    });
  if (name == "count")
    return Value::function("list.count", [self](CallArgs& a) {
      Params p("count", a, {"value"});
      const auto& items = self.as_list().items;
      return Value(static_cast<int64_t>(
          std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, p.required(0)); })));
    });
  return std::nullopt;
}

}  // namespace

// Attributes proper (methods, object attributes), without the item fallback.
std::optional<Value> find_attribute(const Value& obj, const std::string& name) {
  if (obj.is_object()) {
    if (const Value* v = obj.as_object().find(name)) return *v;
    return std::nullopt;
  }
  if (obj.is_string()) {
    if (auto it = no_arg_str_methods().find(name); it != no_arg_str_methods().end())
      return Value::function("str." + name, [self = obj.as_string(), name, fn = it->second](CallArgs& a) {
        Params(name, a, {});
        return fn(self);
      });
    auto& methods = str_methods();
    auto it = methods.find(name);
    if (it == methods.end()) return std::nullopt;
    StrMethod fn = it->second;
    return Value::function("str." + name, [self = obj.as_string(), fn](CallArgs& a) { return fn(self, a); });
  }
  if (obj.is_dict()) return dict_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return std::nullopt;
}

Value missing_attribute(const Value& obj, const std::string& name) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about "'" + string here.
  std::string message = "'";
  message += obj.object_description();
  message += "' has no attribute '";
  message += name;
  message += "'";
  return Undefined{std::move(message)};
}

}  // namespace qinfer::jinja
