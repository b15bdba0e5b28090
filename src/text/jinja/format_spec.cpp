#include "text/jinja/format_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "text/jinja/budget.h"
#include "text/jinja/pystring.h"
#include "util/utf8.h"

namespace qinfer::jinja {

namespace {

// [[fill]align][sign]["z"]["#"]["0"][width][grouping]["." precision][type]
struct Spec {
  std::string fill;  // one code point, or empty: not given
  char align = 0, sign = 0, group = 0, type = 0;
  bool z = false, alt = false;
  int64_t width = 0, precision = -1;
};

bool is_align(char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; }

Spec parse(const std::string& text, char default_align) {
  const std::u32string s = decode_utf8(text);
  Spec f;
  size_t i = 0;
  if (s.size() >= 2 && is_align(s[1])) {
    f.fill = encode_utf8(s.substr(0, 1));
    f.align = static_cast<char>(s[1]);
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    f.align = static_cast<char>(s[0]);
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) f.sign = static_cast<char>(s[i++]);
  if (i < s.size() && s[i] == 'z') f.z = ++i;
  if (i < s.size() && s[i] == '#') f.alt = ++i;
  if (i < s.size() && s[i] == '0') {  // zero padding, sign-aware for numbers, unless a fill was given
    if (f.fill.empty()) {
      f.fill.assign(1, '0');
      if (!f.align && default_align == '>') f.align = '=';
    }
    ++i;
  }
  auto number = [&] {
    int64_t v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      v = v * 10 + (s[i] - '0');
      if (v > INT32_MAX) eval_fail("Too many decimal digits in format string");
    }
    return v;
  };
  f.width = number();
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) f.group = static_cast<char>(s[i++]);
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) eval_fail("Cannot specify both ',' and '_'.");
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || s[i] < '0' || s[i] > '9') eval_fail("Format specifier missing precision");
    f.precision = number();
  }
  if (s.size() - i > 1 || (i < s.size() && s[i] >= 0x80)) eval_fail("Invalid format specifier '", text, "'");
  if (i < s.size()) f.type = static_cast<char>(s[i]);
  if (f.fill.empty()) f.fill.assign(1, ' ');  // assign: GCC 12 warns (-Wrestrict, falsely) on = "..."
  if (!f.align) f.align = default_align;
  RenderBudget::check_string(static_cast<double>(std::max(f.width, f.precision)));  // before printf makes them
  return f;
}

// sign + prefix + body padded to the width as the alignment says ('=': after the sign and prefix).
std::string pad(const Spec& f, const std::string& sign, const std::string& prefix, const std::string& body) {
  const std::string text = sign + prefix + body;
  const auto n = static_cast<int64_t>(count_code_points(text));
  if (f.width <= n) return text;
  std::string before, after;
  const int64_t total = f.width - n, left = f.align == '<' ? 0 : f.align == '^' ? total / 2 : total;
  for (int64_t k = 0; k < left; ++k) before += f.fill;
  for (int64_t k = left; k < total; ++k) after += f.fill;
  return f.align == '=' ? sign + prefix + before + body : before + text + after;
}

// Digits with a separator every `every` digits from the right; with zero
// padding ('=' and fill '0') first widened with zeros until sign, prefix and
// the grouped digits with `rest` fill min_width, a separator never leading.
std::string grouped(std::string digits, char sep, size_t every, size_t min_width) {
  auto with_seps = [&](const std::string& d) {
    std::string out;
    for (size_t k = 0; k < d.size(); ++k) {
      if (k > 0 && (d.size() - k) % every == 0) out += sep;
      out += d[k];
    }
    return out;
  };
  std::string out = with_seps(digits);
  while (out.size() < min_width) {
    digits.insert(0, 1, '0');
    out = with_seps(digits);
  }
  return out;
}

void require_no_group_with(const Spec& f, char type) {
  if (f.group) eval_fail("Cannot specify '", f.group, "' with '", type, "'.");
}

std::string format_string(const std::string& s, const Spec& f, const char* type_name) {
  if (f.type && f.type != 's') eval_fail("Unknown format code '", f.type, "' for object of type '", type_name, "'");
  if (f.sign) eval_fail("Sign not allowed in string format specifier");
  if (f.z) eval_fail("Negative zero coercion (z) not allowed in string format specifier");
  if (f.alt) eval_fail("Alternate form (#) not allowed in string format specifier");
  if (f.align == '=') eval_fail("'=' alignment not allowed in string format specifier");
  require_no_group_with(f, 's');
  std::string text = s;
  if (f.precision >= 0) {
    const std::u32string cs = decode_utf8(text);
    if (static_cast<int64_t>(cs.size()) > f.precision)
      text = encode_utf8(cs.substr(0, static_cast<size_t>(f.precision)));
  }
  return pad(f, "", "", text);
}

std::string sign_of(const Spec& f, bool negative) {
  return negative ? "-" : f.sign == '+' ? "+" : f.sign == ' ' ? " " : "";
}

std::string format_float(double x, Spec f) {
  const char type = f.type;
  if (type && !std::strchr("eEfFgGn%", type)) eval_fail("Unknown format code '", type, "' for object of type 'float'");
  if (type == 'n') require_no_group_with(f, 'n');
  bool negative = std::signbit(x) && !std::isnan(x);
  const double v = std::fabs(x) * (type == '%' ? 100 : 1);  // '%' of the largest doubles is inf%
  std::string body;
  if (!type && f.precision < 0) {
    body = py_float_repr(v);
    if (f.alt && std::isfinite(v) && body.find('.') == std::string::npos)
      body.insert(std::min(body.find('e'), body.size()), 1, '.');
  } else {
    const char as = !type ? 'r' : type == 'n' ? 'g' : type == '%' ? 'f' : type;
    body = py_format_double(v, as, f.precision < 0 ? 6 : f.precision, f.alt);
  }
  // z: a result that rounded to zero has no sign
  if (f.z && negative && body.substr(0, body.find_first_of("eE")).find_first_not_of("0.") == std::string::npos)
    negative = false;
  if (type == '%') body += '%';
  if (f.group && std::isfinite(v)) {
    const size_t int_end = std::min(body.find_first_not_of("0123456789"), body.size());
    const std::string sign = sign_of(f, negative);
    const size_t min_width =
        f.align == '=' && f.fill == "0" && f.width > 0
            ? static_cast<size_t>(f.width) - std::min(static_cast<size_t>(f.width), sign.size() + body.size() - int_end)
            : 0;
    body = grouped(body.substr(0, int_end), f.group, 3, min_width) + body.substr(int_end);
  }
  return pad(f, sign_of(f, negative), "", body);
}

std::string format_int(Int v, const Spec& f, const std::string& type_name) {
  const char type = f.type ? f.type : 'd';
  if (std::strchr("eEfFgG%", type)) return format_float(static_cast<double>(v), f);
  if (!std::strchr("dnbcoxX", type)) eval_fail("Unknown format code '", type, "' for object of type '", type_name, "'");
  if (f.precision >= 0) eval_fail("Precision not allowed in integer format specifier");
  if (f.z) eval_fail("Negative zero coercion (z) not allowed in integer format specifier");
  if (type == 'c') {
    if (f.sign) eval_fail("Sign not allowed with integer format specifier 'c'");
    if (f.alt) eval_fail("Alternate form (#) not allowed with integer format specifier 'c'");
    require_no_group_with(f, 'c');
    if (v < 0 || v > 0x10FFFF) eval_fail("%c arg not in range(0x110000)");
    if (v >= 0xD800 && v <= 0xDFFF)
      eval_fail("%c arg ", int_to_string(v), " is a surrogate, which UTF-8 cannot encode");
    std::string ch;
    utf8::append_code_point(ch, static_cast<char32_t>(v));
    return pad(f, "", "", ch);
  }
  if (type == 'n') require_no_group_with(f, 'n');
  const int base = type == 'b' ? 2 : type == 'o' ? 8 : type == 'x' || type == 'X' ? 16 : 10;
  if (f.group == ',' && base != 10) require_no_group_with(f, type);
  std::string digits = int_digits(v, base, type == 'X');
  const std::string sign = sign_of(f, v < 0);
  const std::string prefix = f.alt && base != 10 ? std::string("0") + (type == 'd' || type == 'n' ? 'd' : type) : "";
  if (f.group) {
    const size_t taken = sign.size() + prefix.size();
    const size_t min_width = f.align == '=' && f.fill == "0" && f.width > static_cast<int64_t>(taken)
                                 ? static_cast<size_t>(f.width) - taken
                                 : 0;
    digits = grouped(digits, f.group, base == 10 ? 3 : 4, min_width);
  }
  return pad(f, sign, prefix, digits);
}

}  // namespace

std::string format_with_spec(const Value& v, const std::string& spec) {
  if (spec.empty()) return to_str(v);
  if (v.is_string()) return format_string(v.as_string(), parse(spec, '<'), "str");
  if (v.is_integral()) return format_int(v.integral(), parse(spec, '>'), v.type_name());
  if (v.is_float()) return format_float(v.as_float(), parse(spec, '>'));
  eval_fail("unsupported format string passed to ", v.type_name(), ".__format__");
}

}  // namespace qinfer::jinja
