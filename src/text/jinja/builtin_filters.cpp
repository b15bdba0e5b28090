// jinja2's filters (`x | join(", ")`), as find_filter (builtins.h) finds them.
#include "text/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/jinja/budget.h"
#include "text/jinja/builtin_args.h"
#include "text/jinja/builtin_methods.h"
#include "text/jinja/percent_format.h"
#include "text/jinja/pystring.h"
#include "text/jinja/unicode_chars.h"

namespace qinfer::jinja {

namespace {

// ---- helpers shared by filters ----

// What Python's int(str) and float(str) parse: the text stripped, with every
// decimal digit of any script as its ASCII digit ('٣' is 3) and every other
// non-ASCII character as '?', which no parse accepts.
std::string ascii_number_text(const std::string& text) {
  std::string out;
  for (char32_t c : decode_utf8(py_strip(text, std::nullopt, true, true))) {
    if (c < 0x80)
      out += static_cast<char>(c);
    else
      out += py_decimal_value(c) >= 0 ? static_cast<char>('0' + py_decimal_value(c)) : '?';
  }
  return out;
}

// Python's float(str): surrounding whitespace, underscores between digits, inf/nan.
std::optional<double> parse_py_float(const std::string& text) {
  std::string s = ascii_number_text(text);
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

// Python's int(str, base), up to 128 bits.
std::optional<Int> parse_py_int(const std::string& text, int base) {
  std::string s = ascii_number_text(text);
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
  using Unsigned = unsigned __int128;
  const Unsigned limit = negative ? static_cast<Unsigned>(kIntMax) + 1 : static_cast<Unsigned>(kIntMax);
  Unsigned v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && i + 1 < s.size() && s[i + 1] != '_' && i > 0 && s[i - 1] != '_') continue;
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (v > (limit - static_cast<Unsigned>(d)) / static_cast<Unsigned>(base))
      eval_fail("integer '", text, "' is too large (beyond 128 bits)");
    v = v * static_cast<Unsigned>(base) + static_cast<Unsigned>(d);
  }
  return negative ? static_cast<Int>(0 - v) : static_cast<Int>(v);
}

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0; a
// fallback replaces each step's undefined result (groupby's default).
Value lookup_path(const Value& item, const Value& path, const Value* fallback = nullptr) {
  auto step = [fallback](const Value& from, const Value& key) {
    Value v = get_item(from, key);
    return fallback && v.is_undefined() ? *fallback : v;
  };
  if (path.is_integral()) return step(item, path);
  Value v = item;
  for (const std::string& part : py_split(need_string(path, "attribute"), std::string("."), -1, false)) {
    const std::u32string cs = decode_utf8(part);
    if (cs.empty() || !std::all_of(cs.begin(), cs.end(), is_py_digit)) {
      v = step(v, Value(part));
      continue;
    }
    std::optional<Int> index = parse_py_int(part, 10);  // int(part), as jinja2 does for part.isdigit()
    if (!index) eval_fail("invalid literal for int() with base 10: '", part, "'");
    v = step(v, Value(*index));
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

template <class Key>
std::vector<Value> sorted(std::vector<Value> items, const Key& key, bool reverse) {
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

// jinja2's groupby: the items sorted by the attribute (strings lower-cased
// unless case_sensitive), runs of equal keys grouped; each group is a
// (grouper, list) namedtuple whose grouper is its first item's value as written.
Value f_groupby(Context&, const Value& v, CallArgs& args) {
  Params p("groupby", args, {"attribute", "default", "case_sensitive"});
  const Value attribute = p.required(0);
  const Value fallback = p.get(1, Value(None{}));
  const Value* fallback_or_null = fallback.is_none() ? nullptr : &fallback;
  const bool case_sensitive = p.flag(2, false);
  auto grouper = [&](const Value& item) { return lookup_path(item, attribute, fallback_or_null); };
  auto key = [&](const Value& item) { return case_sensitive ? grouper(item) : ignore_case(grouper(item)); };
  std::vector<Value> items = sorted(iterate(v), key, false);
  std::vector<Value> groups;
  for (size_t begin = 0, end = 0; begin < items.size(); begin = end) {
    const Value first_key = key(items[begin]);
    for (end = begin + 1; end < items.size() && equals(key(items[end]), first_key);) ++end;
    auto group = std::make_shared<ListData>();
    group->items = {grouper(items[begin]), Value::list({items.begin() + static_cast<ptrdiff_t>(begin),
                                                        items.begin() + static_cast<ptrdiff_t>(end)})};
    group->is_tuple = true;
    group->field_names = {"grouper", "list"};
    groups.emplace_back(std::shared_ptr<const ListData>(std::move(group)));
  }
  return Value::list(std::move(groups));
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
    const std::partial_ordering c = compare(k, best_key);
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

// Python's round(i, -digits) of an int: exact (a double holds 53 bits), half
// to even.
Int round_int(Int i, int64_t digits) {
  if (digits > 38) return 0;  // 10**39 is over twice any 128-bit int
  Int unit = 1;
  for (int64_t k = 0; k < digits; ++k) unit *= 10;
  Int whole = i / unit;
  const Int rest = i % unit < 0 ? -(i % unit) : i % unit;
  if (rest > unit - rest || (rest == unit - rest && whole % 2 != 0)) whole += i < 0 ? -1 : 1;
  Int rounded;
  if (__builtin_mul_overflow(whole, unit, &rounded)) fail_overflow();
  return rounded;
}

// Python's round(x, -k) of a float, k in [1, 308]: the decimal value of x
// (exact, as printf prints it) rounded half to even to a multiple of 10**k,
// then the nearest double; a zero keeps the sign of x.
double round_to_tens(double x, int64_t k) {
  if (x == 0 || !std::isfinite(x)) return x;
  char buf[std::numeric_limits<double>::max_exponent10 + 32];  // up to 309 significant digits
  // 40 significant digits first: no double is within 1e-40 of a power of ten it is not.
  std::snprintf(buf, sizeof buf, "%.39e", x);
  const int64_t exponent = std::strtoll(std::strchr(buf, 'e') + 1, nullptr, 10);
  const int64_t digits = exponent - k + 1;  // the significant digits kept
  if (digits >= 1) {
    std::snprintf(buf, sizeof buf, "%.*e", static_cast<int>(digits - 1), x);
    const double rounded = std::strtod(buf, nullptr);
    if (std::isinf(rounded)) eval_fail("rounded value too large to represent");
    return rounded;
  }
  // |x| < 10**k: 0 or 10**k, nearer to |x|; a tie (digits 5 then zeros) goes to 0, the even one.
  const char* lead = buf + (x < 0);
  const bool over_half =
      digits == 0 && (lead[0] > '5' || (lead[0] == '5' && std::strspn(lead + 2, "0") < std::strcspn(lead + 2, "e")));
  return over_half ? std::copysign(std::pow(10.0, static_cast<double>(k)), x) : std::copysign(0.0, x);
}

Value f_round(Context&, const Value& v, CallArgs& args) {
  Params p("round", args, {"precision", "method"});
  const int64_t precision = p.integer(0, 0);
  std::string method = p.string(1).value_or("common");
  if (method != "common" && method != "ceil" && method != "floor") eval_fail("method must be common, ceil or floor");
  if (!v.is_number()) eval_fail("type ", v.type_name(), " doesn't define __round__ method");
  if (method == "common") {  // Python's round(v, precision)
    if (v.is_integral()) return precision >= 0 ? v.integral() : round_int(v.integral(), -precision);
    const double x = v.number();
    // Past the digits a double can have after the point, or before it.
    if (precision > 323) return x;
    if (precision < -308) return 0.0 * x;
    if (precision >= 0) {
      // printf rounds the exact binary value half-to-even, as Python's round does.
      char buf[std::numeric_limits<double>::max_exponent10 + 330];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
      return std::strtod(buf, nullptr);
    }
    return round_to_tens(x, -precision);
  }
  // jinja2's math.ceil/floor(v * 10 ** precision) / 10 ** precision. For
  // precision >= 0, 10 ** precision is an int: v times it as a float (the
  // correctly rounded power, as strtod reads it), and the int that ceil/floor
  // make divided by it exactly, then rounded once (Python's int / int), as
  // strtod reads "digits e-precision". Below 0 it is pow's float.
  if (v.is_integral() && precision >= 0) return static_cast<double>(v.integral());  // ceil and floor keep an int
  if (precision > 308) eval_fail("int too large to convert to float");
  const std::string power = "1e" + std::to_string(precision);
  const double scale =
      precision >= 0 ? std::strtod(power.c_str(), nullptr) : std::pow(10.0, static_cast<double>(precision));
  const double x = v.number() * scale;
  if (std::isinf(x)) eval_fail("cannot convert float infinity to integer");
  if (std::isnan(x)) eval_fail("cannot convert float NaN to integer");
  if (scale == 0) eval_fail("float division by zero");
  const double whole = (method == "ceil" ? std::ceil(x) : std::floor(x)) + 0.0;  // an int has no -0
  if (precision < 0) return whole / scale;
  char buf[std::numeric_limits<double>::max_exponent10 + 32];
  std::snprintf(buf, sizeof buf, "%.0fe-%d", whole, static_cast<int>(precision));
  return std::strtod(buf, nullptr);
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
    bool word_char = is_py_alnum(c) || c == '_';  // Python's \w
    words += word_char && !in_word;
    in_word = word_char;
  }
  return words;
}

}  // namespace

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
      {"groupby", f_groupby},
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

}  // namespace qinfer::jinja
