#include "text/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <utility>

#include "text/jinja/pystring.h"

namespace qinfer::jinja {

namespace {

// ---- argument binding: Python's f(a, b=..., *, key=...) rules ----

class Params {
 public:
  Params(const std::string& function, const CallArgs& args, std::initializer_list<const char*> names)
      : function_(function), names_(names), values_(names.size(), nullptr) {
    if (args.positional.size() > names.size())
      eval_fail(function, "() takes at most ", names.size(), " argument(s) (", args.positional.size(), " given)");
    for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
    for (const auto& keyword : args.keywords) {
      const std::string& key = keyword.first;  // not a structured binding: lambdas capture it (clang 14)
      const Value& value = keyword.second;
      auto it = std::find_if(names_.begin(), names_.end(), [&](const char* n) { return key == n; });
      if (it == names_.end()) eval_fail(function, "() got an unexpected keyword argument '", key, "'");
      size_t i = static_cast<size_t>(it - names_.begin());
      if (values_[i]) eval_fail(function, "() got multiple values for argument '", key, "'");
      values_[i] = &value;
    }
  }

  bool has(size_t i) const { return values_[i] != nullptr; }
  // Missing and None both mean "use the default", as in most Python signatures.
  bool given(size_t i) const { return values_[i] && !values_[i]->is_none(); }
  const Value& required(size_t i) const {
    if (!values_[i]) eval_fail(function_, "() missing required argument '", names_[i], "'");
    return *values_[i];
  }
  Value get(size_t i, Value fallback) const { return values_[i] ? *values_[i] : std::move(fallback); }
  int64_t integer(size_t i, int64_t fallback) const {
    if (!given(i)) return fallback;
    if (!values_[i]->is_integral())
      eval_fail(function_, "(): '", names_[i], "' must be an integer, not ", values_[i]->type_name());
    Int v = values_[i]->integral();
    if (v < INT64_MIN || v > INT64_MAX) eval_fail(function_, "(): '", names_[i], "' is too large");
    return static_cast<int64_t>(v);
  }
  int64_t required_integer(size_t i) const {
    required(i);
    return integer(i, 0);
  }
  bool flag(size_t i, bool fallback) const { return has(i) ? values_[i]->truthy() : fallback; }
  std::optional<std::string> string(size_t i) const {
    if (!given(i)) return std::nullopt;
    if (!values_[i]->is_string())
      eval_fail(function_, "(): '", names_[i], "' must be a string, not ", values_[i]->type_name());
    return values_[i]->as_string();
  }

 private:
  std::string function_;
  std::vector<const char*> names_;
  std::vector<const Value*> values_;
};

const std::string& need_string(const Value& v, const char* what) {
  if (v.is_undefined()) v.fail_undefined();
  if (!v.is_string()) eval_fail(what, " must be a string, not ", v.type_name());
  return v.as_string();
}

[[noreturn]] void fail_operands(const char* op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  eval_fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

[[noreturn]] void fail_overflow() { eval_fail("integer overflow (beyond 128 bits)"); }

// Repetition counts: Python allows any int; beyond the render budget it fails anyway.
int64_t repeat_count(Int n) { return static_cast<int64_t>(std::clamp<Int>(n, -1, int64_t{1} << 40)); }

// Python's float divmod (floatobject.c), which // and % follow.
std::pair<double, double> float_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

template <class T>
std::vector<T> repeat(const std::vector<T>& items, int64_t times) {
  std::vector<T> out;
  if (times <= 0 || items.empty()) return out;
  RenderBudget::check_list(static_cast<double>(items.size()) * static_cast<double>(times));
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return out;
}

std::string repeat_string(const std::string& s, int64_t times) {
  if (times <= 0) return "";
  RenderBudget::check_string(static_cast<double>(s.size()) * static_cast<double>(times));
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(times));
  for (int64_t i = 0; i < times; ++i) out += s;
  return out;
}

// ---- printf-style formatting: "%s and %d" % (a, b) ----

std::string pad(std::string text, int64_t width, bool left_align, char fill = ' ') {
  auto n = static_cast<int64_t>(count_code_points(text));
  if (n >= width) return text;
  RenderBudget::check_string(static_cast<double>(text.size()) + static_cast<double>(width - n));
  std::string padding(static_cast<size_t>(width - n), fill);
  return left_align ? text + padding : padding + text;
}

// snprintf into a string of the size it needs.
template <class T>
std::string c_format(const char* spec, T value) {
  const int n = std::snprintf(nullptr, 0, spec, value);
  if (n < 0) eval_fail("format failed");
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec, value);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  if (args.is_list() && args.as_list().is_tuple) {
    positional = args.as_list().items;
  } else {
    if (args.is_dict()) mapping = &args.as_dict();
    positional.push_back(args);
  }
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) eval_fail("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) eval_fail("incomplete format key");
      if (!mapping) eval_fail("format requires a mapping");
      std::string key = fmt.substr(i + 1, close - i - 1);
      arg = mapping->find(Value(key));
      if (!arg) eval_fail("KeyError: '", key, "'");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::strchr("-+ #0", fmt[i])) flags += fmt[i++];
    // Digits of a width or precision; Python fails beyond its size type, we
    // beyond int32 (either way the result could not be built).
    auto number = [&](const char* what) {
      int64_t v = 0;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
        v = v * 10 + (fmt[i++] - '0');
        if (v > INT32_MAX) eval_fail(what, " too big");
      }
      return v;
    };
    const int64_t width = number("width");
    int64_t precision = -1;
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = number("precision");
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) eval_fail("incomplete format");
    RenderBudget::check_string(static_cast<double>(std::max(width, precision)));
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (next_arg >= positional.size()) eval_fail("not enough arguments for format string");
      arg = &positional[next_arg++];
    }
    bool left = flags.find('-') != std::string::npos;
    std::string spec =
        "%" + flags + (width ? std::to_string(width) : "") + (precision >= 0 ? "." + std::to_string(precision) : "");
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string text = conv == 's' ? to_str(*arg) : repr(*arg);
        if (precision >= 0) {
          std::u32string cs = decode_utf8(text);
          if (static_cast<int64_t>(cs.size()) > precision) text = encode_utf8(cs.substr(0, precision));
        }
        out += pad(text, width, left);
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        bool decimal = conv == 'd' || conv == 'i' || conv == 'u';
        if (!arg->is_number() || (!decimal && arg->is_float()))
          eval_fail("%", conv, " format: ", decimal ? "a real number" : "an integer", " is required, not ",
                    arg->type_name());
        if (arg->is_float() && !std::isfinite(arg->as_float()))
          eval_fail("cannot convert float infinity or NaN to integer");
        double truncated = arg->is_float() ? std::trunc(arg->as_float()) : 0.0;
        if (arg->is_float() && std::fabs(truncated) >= 9.2e18) eval_fail("%", conv, " format: number too large");
        Int whole = arg->is_float() ? static_cast<Int>(truncated) : arg->integral();
        if (whole < INT64_MIN || whole > INT64_MAX) eval_fail("%", conv, " format: number too large");
        out += c_format((spec + "ll" + (conv == 'u' ? 'd' : conv)).c_str(), static_cast<long long>(whole));
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        if (!arg->is_number()) eval_fail("must be real number, not ", arg->type_name());
        out += c_format((spec + conv).c_str(), arg->number());
        break;
      case 'c':
        if (arg->is_integral()) {
          const Int code = arg->integral();
          if (code < 0 || code > 0x10FFFF) eval_fail("%c arg not in range(0x110000)");
          if (code >= 0xD800 && code <= 0xDFFF)
            eval_fail("%c arg ", int_to_string(code), " is a surrogate, which UTF-8 cannot encode");
          std::string ch;
          append_utf8(ch, static_cast<char32_t>(arg->integral()));
          out += pad(ch, width, left);
        } else if (arg->is_string() && count_code_points(arg->as_string()) == 1) {
          out += pad(arg->as_string(), width, left);
        } else {
          eval_fail("%c requires an int or a unicode character");
        }
        break;
      default:
        eval_fail("unsupported format character '", conv, "'");
    }
  }
  // Python skips this check for arguments with __getitem__ other than tuples and str.
  bool mapping_like = mapping || args.is_undefined() || (args.is_list() && !args.as_list().is_tuple);
  if (!mapping_like && next_arg < positional.size()) eval_fail("not all arguments converted during string formatting");
  return out;
}

// ---- str.format("{} {name}", ...) without format specs ----

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
    char conversion = 's';
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) eval_fail("format string conversions other than !r, !s are not supported");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find_first_of(":.[") != std::string::npos)
      eval_fail("format specs and attribute lookups in str.format are not supported");
    const Value* arg = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size())
        eval_fail("Replacement index ", index, " out of range for positional args tuple");
      arg = &args.positional[index];
    } else {
      for (const auto& [k, v] : args.keywords)
        if (k == field) arg = &v;
      if (!arg) eval_fail("KeyError: '", field, "'");
    }
    if (conversion == 'r')
      out += repr(*arg);
    else if (conversion == 's')
      out += to_str(*arg);
    else
      eval_fail("unknown conversion specifier ", conversion);
  }
  return out;
}

// ---- methods of str, dict and list ----

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

template <class Pred>
Value char_class(const std::string& self, Pred pred) {
  std::u32string cs = decode_utf8(self);
  return !cs.empty() && std::all_of(cs.begin(), cs.end(), pred);
}

Value case_test(const std::string& self, bool want_lower) {
  bool cased = false;
  for (char32_t c : decode_utf8(self)) {
    if (is_py_lower(c)) {
      if (!want_lower) return false;
      cased = true;
    } else if (is_py_upper(c)) {
      if (want_lower) return false;
      cased = true;
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

Value partition(const std::string& self, CallArgs& args, bool from_right) {
  Params p(from_right ? "rpartition" : "partition", args, {"sep"});
  const std::string& sep = need_string(p.required(0), "separator");
  if (sep.empty()) eval_fail("empty separator");
  size_t at = from_right ? self.rfind(sep) : self.find(sep);
  if (at == std::string::npos)
    return from_right ? Value::list({"", "", self}, true) : Value::list({self, "", ""}, true);
  return Value::list({self.substr(0, at), sep, self.substr(at + sep.size())}, true);
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
      {"upper",
       [](const std::string& s, CallArgs& a) {
         Params("upper", a, {});
         return Value(py_upper(s));
       }},
      {"lower",
       [](const std::string& s, CallArgs& a) {
         Params("lower", a, {});
         return Value(py_lower(s));
       }},
      {"casefold",
       [](const std::string& s, CallArgs& a) {
         Params("casefold", a, {});
         return Value(py_lower(s));
       }},
      {"capitalize",
       [](const std::string& s, CallArgs& a) {
         Params("capitalize", a, {});
         return Value(py_capitalize(s));
       }},
      {"title",
       [](const std::string& s, CallArgs& a) {
         Params("title", a, {});
         return Value(py_title(s));
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
      {"isdigit", [](const std::string& s, CallArgs&) { return char_class(s, is_py_digit); }},
      {"isdecimal", [](const std::string& s, CallArgs&) { return char_class(s, is_py_digit); }},
      {"isnumeric", [](const std::string& s, CallArgs&) { return char_class(s, is_py_digit); }},
      {"isalpha", [](const std::string& s, CallArgs&) { return char_class(s, is_py_alpha); }},
      {"isalnum", [](const std::string& s,
                     CallArgs&) { return char_class(s, [](char32_t c) { return is_py_alpha(c) || is_py_digit(c); }); }},
      {"isspace", [](const std::string& s, CallArgs&) { return char_class(s, is_py_space); }},
      {"islower", [](const std::string& s, CallArgs&) { return case_test(s, true); }},
      {"isupper", [](const std::string& s, CallArgs&) { return case_test(s, false); }},
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

// Attributes proper (methods, object attributes), without the item fallback.
std::optional<Value> find_attribute(const Value& obj, const std::string& name) {
  if (obj.is_object()) {
    if (const Value* v = obj.as_object().find(name)) return *v;
    return std::nullopt;
  }
  if (obj.is_string()) {
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
  return Undefined{"'" + obj.object_description() + "' has no attribute '" + name + "'"};
}

// ---- helpers shared by filters ----

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value lookup_path(const Value& item, const Value& path) {
  if (path.is_integral()) return get_item(item, path);
  Value v = item;
  for (const std::string& part : py_split(need_string(path, "attribute"), std::string("."), -1, false)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = numeric ? get_item(v, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(v, Value(part));
  }
  return v;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.as_string())) : v; }

// Sort/min/max/unique key: optional attribute path(s), optionally lower-cased.
struct KeyFn {
  std::optional<Value> attribute;
  bool case_sensitive = false;
  Value operator()(const Value& item) const {
    if (attribute && attribute->is_string() && attribute->as_string().find(',') != std::string::npos) {
      std::vector<Value> keys;
      for (const std::string& a : py_split(attribute->as_string(), std::string(","), -1, false))
        keys.push_back(key(lookup_path(item, Value(py_strip(a, std::nullopt, true, true)))));
      return Value::list(std::move(keys), true);
    }
    return key(attribute ? lookup_path(item, *attribute) : item);
  }
  Value key(const Value& v) const { return case_sensitive ? v : ignore_case(v); }
};

std::vector<Value> sorted(std::vector<Value> items, const KeyFn& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) keyed.emplace_back(key(item), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? compare(b.first, a.first) < 0 : compare(a.first, b.first) < 0;
  });
  std::vector<Value> out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return out;
}

// jinja2's generator filters run when their result is first used, so their
// errors are kept in the generator and raised by whatever consumes it.
template <class Compute>
Value lazy_generator(const char* function, Compute compute) {
  try {
    return Value::generator(compute(), function);
  } catch (const EvalError& e) {
    Value g = Value::generator({}, function);
    g.as_generator().error = e.what();
    return g;
  }
}

Value call_filter_by_name(Context& ctx, const std::string& name, const Value& value, CallArgs args) {
  FilterFn fn = find_filter(name);
  if (!fn) eval_fail("no filter named '", name, "'");
  return fn(ctx, value, args);
}

bool call_test_by_name(Context& ctx, const std::string& name, const Value& value, CallArgs args) {
  TestFn fn = find_test(name);
  if (!fn) eval_fail("no test named '", name, "'");
  return fn(ctx, value, args);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's float(str): surrounding whitespace, underscores between digits, inf/nan.
std::optional<double> parse_py_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    cleaned += s[i];
  }
  if (cleaned.empty() || cleaned.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size()) return std::nullopt;
  return v;
}

// Python's int(str, base).
std::optional<int64_t> parse_py_int(const std::string& text, int base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i + 1 < s.size() && s[i] == '0') {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
    int prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixed && (base == 0 || base == prefixed)) {
      base = prefixed;
      i += 2;
      if (i < s.size() && s[i] == '_') ++i;
    }
  }
  if (base == 0) base = 10;
  if (i >= s.size()) return std::nullopt;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && i + 1 < s.size() && s[i + 1] != '_' && i > 0 && s[i - 1] != '_') continue;
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (v > (static_cast<uint64_t>(INT64_MAX) + 1 - d) / base)
      eval_fail("integer '", text, "' is too large (limit 2^63-1)");
    v = v * base + d;
  }
  if (!negative && v > static_cast<uint64_t>(INT64_MAX)) eval_fail("integer '", text, "' is too large (limit 2^63-1)");
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

// ---- filters ----

Value f_abs(Context&, const Value& v, CallArgs& args) {
  Params("abs", args, {});
  if (v.is_float()) return std::fabs(v.as_float());
  if (!v.is_integral()) eval_fail("bad operand type for abs(): '", v.type_name(), "'");
  if (v.integral() == kIntMin) fail_overflow();
  return v.integral() < 0 ? -v.integral() : v.integral();
}

Value f_attr(Context&, const Value& v, CallArgs& args) {
  Params p("attr", args, {"name"});
  const std::string& name = need_string(p.required(0), "attribute name");
  if (v.is_undefined()) v.fail_undefined();
  return find_attribute(v, name).value_or(missing_attribute(v, name));
}

// Lists of `linecount` items; the last one padded with fill_with when given.
Value f_batch(Context&, const Value& v, CallArgs& args) {
  Params p("batch", args, {"linecount", "fill_with"});
  int64_t count = p.required_integer(0);
  return lazy_generator("do_batch", [&] {
    std::vector<Value> batches, current;
    for (const Value& item : iterate(v)) {
      if (static_cast<int64_t>(current.size()) == count) batches.push_back(Value::list(std::exchange(current, {})));
      current.push_back(item);
    }
    if (!current.empty()) {
      if (p.given(1) && static_cast<int64_t>(current.size()) < count) {
        RenderBudget::check_list(static_cast<double>(count));
        current.resize(static_cast<size_t>(count), p.required(1));
      }
      batches.push_back(Value::list(std::move(current)));
    }
    return batches;
  });
}

// `slices` columns of nearly equal length, the first ones one longer.
Value f_slice(Context&, const Value& v, CallArgs& args) {
  Params p("slice", args, {"slices", "fill_with"});
  int64_t slices = p.required_integer(0);
  return lazy_generator("do_slice", [&] {
    if (slices == 0) eval_fail("integer division or modulo by zero");
    std::vector<Value> seq = iterate(v);
    std::vector<Value> out;
    if (slices < 0) return out;  // range(slices) is empty
    RenderBudget::check_list(static_cast<double>(slices));
    auto n = static_cast<int64_t>(seq.size());
    int64_t per_slice = n / slices, with_extra = n % slices, offset = 0;
    for (int64_t i = 0; i < slices; ++i) {
      int64_t start = offset + i * per_slice;
      if (i < with_extra) ++offset;
      int64_t end = offset + (i + 1) * per_slice;
      std::vector<Value> part(seq.begin() + start, seq.begin() + end);
      if (p.given(1) && i >= with_extra) part.push_back(p.required(1));
      out.push_back(Value::list(std::move(part)));
    }
    return out;
  });
}

Value f_capitalize(Context&, const Value& v, CallArgs& args) {
  Params("capitalize", args, {});
  return py_capitalize(to_str(v));
}

Value f_center(Context&, const Value& v, CallArgs& args) {
  Params p("center", args, {"width"});
  CallArgs a;
  a.positional.push_back(p.get(0, Value(80)));
  return justify("center", to_str(v), a, 0);
}

Value f_default(Context&, const Value& v, CallArgs& args) {
  Params p("default", args, {"default_value", "boolean"});
  bool use_default = v.is_undefined() || (p.flag(1, false) && !v.truthy());
  return use_default ? p.get(0, Value("")) : v;
}

Value f_dictsort(Context&, const Value& v, CallArgs& args) {
  Params p("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) eval_fail("dictsort expects a mapping, got ", v.type_name());
  std::string by = p.string(1).value_or("key");
  if (by != "key" && by != "value") eval_fail("You can only sort by either \"key\" or \"value\"");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_dict().entries) pairs.push_back(Value::list({k, val}, true));
  KeyFn key{Value(static_cast<int64_t>(by == "key" ? 0 : 1)), p.flag(0, false)};
  return Value::list(sorted(std::move(pairs), key, p.flag(2, false)));
}

Value f_escape(Context&, const Value& v, CallArgs& args) {
  Params("escape", args, {});
  return html_escape(to_str(v));
}

Value f_first(Context&, const Value& v, CallArgs& args) {
  Params("first", args, {});
  if (v.is_generator()) {  // takes one item, leaving the rest
    GeneratorData& g = v.as_generator();
    if (g.next < g.items.size()) return g.items[g.next++];
    if (!g.error.empty()) throw EvalError(g.error);
    return Undefined{"No first item, sequence was empty."};
  }
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Undefined{"No first item, sequence was empty."};
  return items.front();
}

Value f_last(Context&, const Value& v, CallArgs& args) {
  Params("last", args, {});
  if (!v.is_list() && !v.is_string() && !v.is_dict() && !v.is_undefined())
    eval_fail("'", v.type_name(), "' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Undefined{"No last item, sequence was empty."};
  return items.back();
}

Value f_float(Context&, const Value& v, CallArgs& args) {
  Params p("float", args, {"default"});
  if (v.is_undefined()) v.fail_undefined();  // Undefined's __float__ raises
  if (v.is_number()) return v.number();
  if (v.is_string())
    if (auto d = parse_py_float(v.as_string())) return *d;
  return p.get(0, Value(0.0));
}

Value f_int(Context&, const Value& v, CallArgs& args) {
  Params p("int", args, {"default", "base"});
  Value fallback = p.get(0, Value(0));
  if (v.is_undefined()) v.fail_undefined();  // Undefined's __int__ raises
  if (v.is_integral()) return v.integral();
  std::optional<double> as_float;
  if (v.is_string()) {
    if (auto i = parse_py_int(v.as_string(), static_cast<int>(p.integer(1, 10)))) return *i;
    as_float = parse_py_float(v.as_string());  // "42.23"|int is 42
  } else if (v.is_float()) {
    as_float = v.as_float();
  }
  if (!as_float || !std::isfinite(*as_float)) return fallback;
  double t = std::trunc(*as_float);
  if (t >= 0x1p127 || t < -0x1p127) eval_fail("integer too large (beyond 128 bits)");
  return static_cast<Int>(t);
}

Value f_format(Context&, const Value& v, CallArgs& args) {
  if (!args.keywords.empty()) {
    if (!args.positional.empty()) eval_fail("can't handle positional and keyword arguments at the same time");
    DictData d;
    for (auto& [k, val] : args.keywords) d.set(Value(k), val);
    return percent_format(to_str(v), Value::dict(std::move(d)));
  }
  return percent_format(to_str(v), Value::list(args.positional, true));
}

Value f_indent(Context&, const Value& v, CallArgs& args) {
  Params p("indent", args, {"width", "first", "blank"});
  Value width = p.get(0, Value(4));
  std::string indention;
  if (width.is_string()) {
    indention = width.as_string();
  } else {
    const int64_t spaces = std::max<int64_t>(0, p.integer(0, 4));
    RenderBudget::check_string(static_cast<double>(spaces));
    indention.assign(static_cast<size_t>(spaces), ' ');
  }
  if (v.is_undefined()) v.fail_undefined();
  if (!v.is_string()) eval_fail("indent needs a string, not ", v.type_name());
  std::string s = v.as_string() + "\n";  // jinja2 appends a newline so splitlines keeps a trailing empty line
  std::vector<std::string> lines = py_splitlines(s, false);
  RenderBudget::check_string(static_cast<double>(s.size()) +
                             static_cast<double>(lines.size() + 1) * static_cast<double>(indention.size()));
  std::string out;
  if (p.flag(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + indention : "") + lines[i];
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out += "\n" + (lines[i].empty() ? "" : indention);
      out += lines[i];
    }
  }
  if (p.flag(1, false)) out = indention + out;
  return out;
}

Value f_items(Context&, const Value& v, CallArgs& args) {
  Params("items", args, {});
  return lazy_generator("do_items", [&] {
    std::vector<Value> out;
    if (v.is_undefined()) return out;
    if (!v.is_dict()) eval_fail("Can only get item pairs from a mapping.");
    for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::list({k, val}, true));
    return out;
  });
}

Value f_join(Context&, const Value& v, CallArgs& args) {
  Params p("join", args, {"d", "attribute"});
  std::string sep = to_str(p.get(0, Value("")));
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(p.has(1) ? lookup_path(item, p.required(1)) : item);
    RenderBudget::check_string(static_cast<double>(out.size()));
  }
  return out;
}

Value f_length(Context&, const Value& v, CallArgs& args) {
  Params("length", args, {});
  return length(v);
}

Value f_list(Context&, const Value& v, CallArgs& args) {
  Params("list", args, {});
  return Value::list(iterate(v));
}

Value f_lower(Context&, const Value& v, CallArgs& args) {
  Params("lower", args, {});
  return py_lower(to_str(v));
}

Value f_upper(Context&, const Value& v, CallArgs& args) {
  Params("upper", args, {});
  return py_upper(to_str(v));
}

// jinja2 maps nothing (and checks nothing) when the value is false.
Value f_map(Context& ctx, const Value& v, CallArgs& args) {
  return lazy_generator("sync_do_map", [&] {
    std::vector<Value> out;
    if (!v.truthy()) return out;
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [k, val] : args.keywords) {
      if (k == "attribute")
        attribute = &val;
      else if (k == "default")
        fallback = &val;
    }
    if (args.positional.empty() && attribute) {
      for (const auto& [k, val] : args.keywords)
        if (k != "attribute" && k != "default") eval_fail("unexpected keyword argument '", k, "'");
      for (const Value& item : iterate(v)) {
        Value r = lookup_path(item, *attribute);
        out.push_back(fallback && !fallback->is_none() && r.is_undefined() ? *fallback : r);
      }
      return out;
    }
    if (args.positional.empty()) eval_fail("map requires a filter argument");
    const std::string& name = need_string(args.positional[0], "filter name");
    CallArgs rest{std::vector<Value>(args.positional.begin() + 1, args.positional.end()), args.keywords};
    for (const Value& item : iterate(v)) out.push_back(call_filter_by_name(ctx, name, item, rest));
    return out;
  });
}

Value min_or_max(const char* name, const Value& v, CallArgs& args, bool want_max) {
  Params p(name, args, {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Undefined{"No aggregated item, sequence was empty."};
  KeyFn key{p.has(1) ? std::optional<Value>(p.required(1)) : std::nullopt, p.flag(0, false)};
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    int c = compare(k, best_key);
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Context&, const Value& v, CallArgs& args) { return min_or_max("max", v, args, true); }
Value f_min(Context&, const Value& v, CallArgs& args) { return min_or_max("min", v, args, false); }

// select/reject/selectattr/rejectattr share jinja2's select_or_reject, which
// yields nothing (and checks nothing) when the value is false.
Value select_or_reject(Context& ctx, const Value& v, CallArgs& args, bool keep_when, bool by_attribute) {
  return lazy_generator("select_or_reject", [&] {
    std::vector<Value> out;
    if (!v.truthy()) return out;
    size_t offset = 0;
    std::optional<Value> attribute;
    if (by_attribute) {
      if (args.positional.empty()) eval_fail("missing parameter for attribute name");
      attribute = args.positional[0];
      offset = 1;
    }
    std::optional<std::string> test;
    if (args.positional.size() > offset) test = need_string(args.positional[offset], "test name");
    CallArgs test_args{{}, args.keywords};
    if (args.positional.size() > offset + 1)
      test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(offset + 1),
                                  args.positional.end());
    for (const Value& item : iterate(v)) {
      Value subject = attribute ? lookup_path(item, *attribute) : item;
      bool passed = test ? call_test_by_name(ctx, *test, subject, test_args) : subject.truthy();
      if (passed == keep_when) out.push_back(item);
    }
    return out;
  });
}

Value f_select(Context& ctx, const Value& v, CallArgs& args) { return select_or_reject(ctx, v, args, true, false); }
Value f_reject(Context& ctx, const Value& v, CallArgs& args) { return select_or_reject(ctx, v, args, false, false); }
Value f_selectattr(Context& ctx, const Value& v, CallArgs& args) { return select_or_reject(ctx, v, args, true, true); }
Value f_rejectattr(Context& ctx, const Value& v, CallArgs& args) { return select_or_reject(ctx, v, args, false, true); }

Value f_replace(Context&, const Value& v, CallArgs& args) {
  Params p("replace", args, {"old", "new", "count"});
  return py_replace(to_str(v), to_str(p.required(0)), to_str(p.required(1)), p.integer(2, -1));
}

Value f_reverse(Context&, const Value& v, CallArgs& args) {
  Params("reverse", args, {});
  if (v.is_string()) {
    std::u32string cs = decode_utf8(v.as_string());
    return encode_utf8(std::u32string(cs.rbegin(), cs.rend()));
  }
  // Python's reversed() iterator for sequences; other iterables become a reversed list.
  bool reversible = v.is_list() || v.is_dict() || v.is_undefined();
  std::vector<Value> items = iterate(v);
  std::vector<Value> reversed(items.rbegin(), items.rend());
  if (!reversible) return Value::list(std::move(reversed));
  const char* type = v.is_dict()                              ? "dict_reversekeyiterator"
                     : (v.is_list() && !v.as_list().is_tuple) ? "list_reverseiterator"
                                                              : "reversed";
  return Value::generator(std::move(reversed), "", type);
}

Value f_round(Context&, const Value& v, CallArgs& args) {
  Params p("round", args, {"precision", "method"});
  int64_t precision = p.integer(0, 0);
  std::string method = p.string(1).value_or("common");
  if (method != "common" && method != "ceil" && method != "floor") eval_fail("method must be common, ceil or floor");
  if (!v.is_number()) eval_fail("type ", v.type_name(), " doesn't define __round__ method");
  if (precision < -308 || precision > 308) eval_fail("precision out of range");
  if (method == "common") {
    if (v.is_integral() && precision >= 0) return v.integral();
    if (precision >= 0) {
      // printf rounds the exact binary value half-to-even, as Python's round does.
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.number());
      return std::strtod(buf, nullptr);
    }
    double scale = std::pow(10.0, static_cast<double>(-precision));
    double r = std::nearbyint(v.number() / scale) * scale;
    return v.is_integral() ? Value(static_cast<Int>(r)) : Value(r);
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.number() * scale;
  return (method == "ceil" ? std::ceil(x) : std::floor(x)) / scale;
}

Value f_safe(Context&, const Value& v, CallArgs& args) {
  Params("safe", args, {});
  return to_str(v);
}

Value f_sort(Context&, const Value& v, CallArgs& args) {
  Params p("sort", args, {"reverse", "case_sensitive", "attribute"});
  KeyFn key{p.has(2) ? std::optional<Value>(p.required(2)) : std::nullopt, p.flag(1, false)};
  return Value::list(sorted(iterate(v), key, p.flag(0, false)));
}

Value f_string(Context&, const Value& v, CallArgs& args) {
  Params("string", args, {});
  return to_str(v);
}

Value f_sum(Context&, const Value& v, CallArgs& args) {
  Params p("sum", args, {"attribute", "start"});
  Value total = p.get(1, Value(0));
  for (const Value& item : iterate(v))
    total = binary_op(BinaryOp::Add, total, p.has(0) ? lookup_path(item, p.required(0)) : item);
  return total;
}

Value f_title(Context&, const Value& v, CallArgs& args) {
  Params("title", args, {});
  return jinja_title(to_str(v));
}

// transformers replaces jinja2's tojson (which HTML-escapes) with json.dumps.
Value f_tojson(Context&, const Value& v, CallArgs& args) {
  Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = p.flag(0, false);
  o.sort_keys = p.flag(3, false);
  if (p.given(1)) {
    const Value& indent = p.required(1);
    o.indent = indent.is_string()
                   ? indent.as_string()
                   : std::string(static_cast<size_t>(std::clamp<int64_t>(p.integer(1, 0), 0, 1024)), ' ');
    o.item_separator = ",";
  }
  if (p.given(2)) {
    const Value& seps = p.required(2);
    if (!seps.is_list() || seps.as_list().items.size() != 2)
      eval_fail("separators must be an (item_separator, key_separator) pair");
    o.item_separator = need_string(seps.as_list().items[0], "item separator");
    o.key_separator = need_string(seps.as_list().items[1], "key separator");
  }
  return json_dumps(v, o);
}

Value f_trim(Context&, const Value& v, CallArgs& args) {
  Params p("trim", args, {"chars"});
  return py_strip(to_str(v), p.string(0), true, true);
}

Value f_truncate(Context&, const Value& v, CallArgs& args) {
  Params p("truncate", args, {"length", "killwords", "end", "leeway"});
  int64_t len = p.integer(0, 255);
  std::string end = p.string(2).value_or("...");
  int64_t leeway = p.integer(3, 5);
  auto end_len = static_cast<int64_t>(count_code_points(end));
  if (len < end_len) eval_fail("expected length >= ", end_len, ", got ", len);
  if (leeway < 0) eval_fail("expected leeway >= 0, got ", leeway);
  // jinja2 measures and slices the value itself: short sized values come back unchanged.
  if (length(v) <= len + leeway) return v;
  if (!v.is_string()) eval_fail("truncate needs a string, not ", v.type_name());
  std::u32string cs = decode_utf8(v.as_string());
  std::string head = encode_utf8(cs.substr(0, static_cast<size_t>(len - end_len)));
  if (p.flag(1, false)) return head + end;
  return py_split(head, std::string(" "), 1, true).front() + end;
}

Value f_unique(Context&, const Value& v, CallArgs& args) {
  Params p("unique", args, {"case_sensitive", "attribute"});
  KeyFn key{p.has(1) ? std::optional<Value>(p.required(1)) : std::nullopt, p.flag(0, false)};
  return lazy_generator("sync_do_unique", [&] {
    std::vector<Value> seen, out;
    for (const Value& item : iterate(v)) {
      Value k = key(item);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
      seen.push_back(std::move(k));
      out.push_back(item);
    }
    return out;
  });
}

Value f_wordcount(Context&, const Value& v, CallArgs& args) {
  Params("wordcount", args, {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(to_str(v))) {
    bool word_char = is_py_alpha(c) || is_py_digit(c) || c == '_';
    words += word_char && !in_word;
    in_word = word_char;
  }
  return words;
}

// ---- tests ----

bool t_defined(Context&, const Value& v, CallArgs& a) {
  Params("defined", a, {});
  return !v.is_undefined();
}
bool t_undefined(Context&, const Value& v, CallArgs& a) {
  Params("undefined", a, {});
  return v.is_undefined();
}
bool t_none(Context&, const Value& v, CallArgs& a) {
  Params("none", a, {});
  return v.is_none();
}
bool t_boolean(Context&, const Value& v, CallArgs& a) {
  Params("boolean", a, {});
  return v.is_bool();
}
bool t_false(Context&, const Value& v, CallArgs& a) {
  Params("false", a, {});
  return v.is_bool() && !v.as_bool();
}
bool t_true(Context&, const Value& v, CallArgs& a) {
  Params("true", a, {});
  return v.is_bool() && v.as_bool();
}
bool t_integer(Context&, const Value& v, CallArgs& a) {
  Params("integer", a, {});
  return v.is_int();
}
bool t_float(Context&, const Value& v, CallArgs& a) {
  Params("float", a, {});
  return v.is_float();
}
bool t_number(Context&, const Value& v, CallArgs& a) {
  Params("number", a, {});
  return v.is_number();
}
bool t_string(Context&, const Value& v, CallArgs& a) {
  Params("string", a, {});
  return v.is_string();
}
bool t_mapping(Context&, const Value& v, CallArgs& a) {
  Params("mapping", a, {});
  return v.is_dict();
}
// jinja2 checks for len() and [] (Undefined has both).
bool t_sequence(Context&, const Value& v, CallArgs& a) {
  Params("sequence", a, {});
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_iterable(Context&, const Value& v, CallArgs& a) {
  Params("iterable", a, {});
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.is_generator() ||
         (v.is_object() && v.as_object().type_name == "LoopContext");
}
bool t_callable(Context&, const Value& v, CallArgs& a) {
  Params("callable", a, {});
  return v.is_function() || v.is_undefined() || (v.is_object() && v.as_object().type_name == "LoopContext");
}
// Python's `is`: None/True/False are singletons; containers compare by identity.
bool t_sameas(Context&, const Value& v, CallArgs& a) {
  Params p("sameas", a, {"other"});
  const Value& o = p.required(0);
  if (v.is_none() || o.is_none() || v.is_bool() || o.is_bool()) return v.type_name() == o.type_name() && equals(v, o);
  if (v.is_list() && o.is_list()) return &v.as_list() == &o.as_list();
  if (v.is_dict() && o.is_dict()) return &v.as_dict() == &o.as_dict();
  return v.type_name() == o.type_name() && equals(v, o);
}
bool t_escaped(Context&, const Value&, CallArgs& a) {
  Params("escaped", a, {});
  return false;
}
bool t_in(Context&, const Value& v, CallArgs& a) {
  Params p("in", a, {"seq"});
  return contains(p.required(0), v);
}
// jinja2: value % 2 == 1 (so 1.5 is neither odd nor even).
bool t_odd(Context&, const Value& v, CallArgs& a) {
  Params("odd", a, {});
  return equals(binary_op(BinaryOp::Mod, v, Value(2)), Value(1));
}
bool t_even(Context&, const Value& v, CallArgs& a) {
  Params("even", a, {});
  return equals(binary_op(BinaryOp::Mod, v, Value(2)), Value(0));
}
bool t_divisibleby(Context&, const Value& v, CallArgs& a) {
  Params p("divisibleby", a, {"num"});
  Value r = binary_op(BinaryOp::Mod, v, p.required(0));
  return equals(r, Value(0));
}
bool t_lower(Context&, const Value& v, CallArgs& a) {
  Params("lower", a, {});
  return case_test(to_str(v), true).as_bool();
}
bool t_upper(Context&, const Value& v, CallArgs& a) {
  Params("upper", a, {});
  return case_test(to_str(v), false).as_bool();
}
bool t_filter(Context&, const Value& v, CallArgs& a) {
  Params("filter", a, {});
  return v.is_string() && find_filter(v.as_string());
}
bool t_test(Context&, const Value& v, CallArgs& a) {
  Params("test", a, {});
  return v.is_string() && find_test(v.as_string());
}

template <CompareOp op>
bool t_compare(Context&, const Value& v, CallArgs& a) {
  Params p("comparison", a, {"other"});
  const Value& o = p.required(0);
  switch (op) {
    case CompareOp::Eq:
      return equals(v, o);
    case CompareOp::Ne:
      return !equals(v, o);
    case CompareOp::Lt:
      return compare(v, o) < 0;
    case CompareOp::Le:
      return compare(v, o) <= 0;
    case CompareOp::Gt:
      return compare(v, o) > 0;
    case CompareOp::Ge:
      return compare(v, o) >= 0;
    default:
      return false;
  }
}

// ---- globals ----

Value g_range(CallArgs& args) {
  Params p("range", args, {"start", "stop", "step"});
  if (!p.has(0)) eval_fail("range expected at least 1 argument, got 0");
  int64_t start = 0, stop = p.integer(0, 0), step = p.integer(2, 1);
  if (p.has(1)) {
    start = stop;
    stop = p.integer(1, 0);
  }
  if (step == 0) eval_fail("range() arg 3 must not be zero");
  // transformers' sandbox refuses ranges over 100,000 items.
  constexpr int64_t kMaxRange = 100000;
  double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  if (count > kMaxRange) eval_fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
  return Value::list(std::move(out));
}

// dict(mapping, **kwargs) and namespace(mapping, **kwargs) take the same arguments.
std::vector<std::pair<Value, Value>> mapping_args(const char* name, CallArgs& args) {
  if (args.positional.size() > 1) eval_fail(name, "() expected at most 1 positional argument");
  DictData d;
  if (!args.positional.empty()) {
    const Value& m = args.positional[0];
    if (m.is_dict()) {
      d = m.as_dict();
    } else {
      for (const Value& pair : iterate(m)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2)
          eval_fail(name, "() needs a mapping or a sequence of (key, value) pairs");
        d.set(pair.as_list().items[0], pair.as_list().items[1]);
      }
    }
  }
  for (auto& [k, v] : args.keywords) d.set(Value(k), v);
  return std::move(d.entries);
}

Value g_dict(CallArgs& args) {
  DictData d;
  d.entries = mapping_args("dict", args);
  return Value::dict(std::move(d));
}

Value g_namespace(CallArgs& args) {
  auto ns = std::make_shared<ObjectData>();
  ns->type_name = "Namespace";
  ns->assignable = true;
  for (auto& [k, v] : mapping_args("namespace", args)) ns->set(to_str(k), v);
  return Value(std::move(ns));
}

Value g_joiner(CallArgs& args) {
  Params p("joiner", args, {"sep"});
  std::string sep = to_str(p.get(0, Value(", ")));
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](CallArgs& a) {
    Params("joiner", a, {});
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(sep);
  });
}

Value g_raise_exception(CallArgs& args) {
  Params p("raise_exception", args, {"message"});
  eval_fail(to_str(p.required(0)));
}

Value g_strftime_now(CallArgs& args) {
  Params p("strftime_now", args, {"format"});
  const std::string& format = need_string(p.required(0), "format");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value("");
  for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
    std::string buf(size, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    if (n > 0) return Value(buf.substr(0, n));
  }
  return Value("");  // formats that produce nothing, like "%p" in some locales
}

}  // namespace

// ---- access and operators ----

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (std::optional<Value> attr = find_attribute(obj, name)) return *attr;
  if (obj.is_dict())
    if (const Value* v = obj.as_dict().find(Value(name))) return *v;
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && key.is_integral()) {
    Int i = key.integral();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    } else {
      std::u32string cs = decode_utf8(obj.as_string());
      auto n = static_cast<int64_t>(cs.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return encode_utf8(cs.substr(static_cast<size_t>(i), 1));
    }
  }
  if (key.is_string()) {
    if (std::optional<Value> attr = find_attribute(obj, key.as_string())) return *attr;
    return missing_attribute(obj, key.as_string());
  }
  return Undefined{obj.object_description() + " has no element " + repr(key)};
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) eval_fail("'in <string>' requires string as left operand, not ", item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    const auto& items = container.as_list().items;
    return std::any_of(items.begin(), items.end(), [&](const Value& v) { return equals(v, item); });
  }
  if (container.is_dict()) return container.as_dict().find(item) != nullptr;
  if (container.is_generator()) {  // consumed up to and including the match, as in Python
    GeneratorData& g = container.as_generator();
    while (g.next < g.items.size())
      if (equals(g.items[g.next++], item)) return true;
    if (!g.error.empty()) throw EvalError(g.error);
    return false;
  }
  if (container.is_undefined()) return false;
  eval_fail("argument of type '", container.type_name(), "' is not iterable");
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::Concat) return to_str(a) + to_str(b);
  bool numbers = a.is_number() && b.is_number();
  bool ints = a.is_integral() && b.is_integral();
  Int r = 0;
  switch (op) {
    case BinaryOp::Add:
      if (ints) {
        if (__builtin_add_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() + b.number();
      if (a.is_string() && b.is_string()) return a.as_string() + b.as_string();
      if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
        std::vector<Value> items = a.as_list().items;
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::list(std::move(items), a.as_list().is_tuple);
      }
      if ((a.is_string() || a.is_list()) && !b.is_undefined())
        eval_fail("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name());
      fail_operands("+", a, b);
    case BinaryOp::Sub:
      if (ints) {
        if (__builtin_sub_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() - b.number();
      fail_operands("-", a, b);
    case BinaryOp::Mul:
      if (ints) {
        if (__builtin_mul_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() * b.number();
      if (a.is_string() && b.is_integral()) return repeat_string(a.as_string(), repeat_count(b.integral()));
      if (a.is_integral() && b.is_string()) return repeat_string(b.as_string(), repeat_count(a.integral()));
      if (a.is_list() && b.is_integral())
        return Value::list(repeat(a.as_list().items, repeat_count(b.integral())), a.as_list().is_tuple);
      if (a.is_integral() && b.is_list())
        return Value::list(repeat(b.as_list().items, repeat_count(a.integral())), b.as_list().is_tuple);
      fail_operands("*", a, b);
    case BinaryOp::Div:
      if (!numbers) fail_operands("/", a, b);
      if (b.number() == 0.0) eval_fail(ints ? "division by zero" : "float division by zero");
      return a.number() / b.number();
    case BinaryOp::FloorDiv:
      if (!numbers) fail_operands("//", a, b);
      if (ints) {
        Int x = a.integral(), y = b.integral();
        if (y == 0) eval_fail("integer division or modulo by zero");
        if (x == kIntMin && y == -1) fail_overflow();
        Int q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) --q;
        return q;
      }
      if (b.number() == 0.0) eval_fail("float floor division by zero");
      return float_divmod(a.number(), b.number()).first;
    case BinaryOp::Mod:
      if (a.is_string()) return percent_format(a.as_string(), b);
      if (!numbers) fail_operands("%", a, b);
      if (ints) {
        Int x = a.integral(), y = b.integral();
        if (y == 0) eval_fail("integer modulo by zero");
        if (y == -1) return 0;
        Int m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return m;
      }
      if (b.number() == 0.0) eval_fail("float modulo");
      return float_divmod(a.number(), b.number()).second;
    case BinaryOp::Pow: {
      if (!numbers) fail_operands("** or pow()", a, b);
      if (ints && b.integral() >= 0) {
        // Square-and-multiply; a squared base is only formed when it will be
        // used, so its overflow means the result overflows too.
        Int base = a.integral(), result = 1;
        for (Int e = b.integral(); e > 0;) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) fail_overflow();
          e >>= 1;
          if (e && __builtin_mul_overflow(base, base, &base)) fail_overflow();
        }
        return result;
      }
      double x = a.number(), y = b.number();
      if (x == 0.0 && y < 0) eval_fail("0.0 cannot be raised to a negative power");
      if (x < 0 && y != std::floor(y)) eval_fail("complex results are not supported");
      return std::pow(x, y);
    }
    default:
      eval_fail("unsupported operator");
  }
}

Value call_value(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) callee.fail_undefined();
  if (!callee.is_function()) eval_fail("'", callee.type_name(), "' object is not callable");
  return callee.as_function().call(args);
}

// ---- tables ----

FilterFn find_filter(const std::string& name) {
  static const std::unordered_map<std::string, FilterFn> filters = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"slice", f_slice},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  auto it = filters.find(name);
  return it == filters.end() ? nullptr : it->second;
}

TestFn find_test(const std::string& name) {
  static const std::unordered_map<std::string, TestFn> tests = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"sequence", t_sequence},
      {"iterable", t_iterable},
      {"callable", t_callable},
      {"sameas", t_sameas},
      {"escaped", t_escaped},
      {"in", t_in},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"lower", t_lower},
      {"upper", t_upper},
      {"filter", t_filter},
      {"test", t_test},
      {"eq", t_compare<CompareOp::Eq>},
      {"equalto", t_compare<CompareOp::Eq>},
      {"==", t_compare<CompareOp::Eq>},
      {"ne", t_compare<CompareOp::Ne>},
      {"!=", t_compare<CompareOp::Ne>},
      {"lt", t_compare<CompareOp::Lt>},
      {"lessthan", t_compare<CompareOp::Lt>},
      {"<", t_compare<CompareOp::Lt>},
      {"le", t_compare<CompareOp::Le>},
      {"<=", t_compare<CompareOp::Le>},
      {"gt", t_compare<CompareOp::Gt>},
      {"greaterthan", t_compare<CompareOp::Gt>},
      {">", t_compare<CompareOp::Gt>},
      {"ge", t_compare<CompareOp::Ge>},
      {">=", t_compare<CompareOp::Ge>},
  };
  auto it = tests.find(name);
  return it == tests.end() ? nullptr : it->second;
}

void add_builtin_globals(Scope& scope) {
  scope.set("range", Value::function("range", g_range));
  scope.set("dict", Value::function("dict", g_dict));
  scope.set("namespace", Value::function("namespace", g_namespace));
  scope.set("joiner", Value::function("joiner", g_joiner));
  scope.set("raise_exception", Value::function("raise_exception", g_raise_exception));
  scope.set("strftime_now", Value::function("strftime_now", g_strftime_now));
}

}  // namespace qinfer::jinja
