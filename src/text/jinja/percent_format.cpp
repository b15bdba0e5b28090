#include "text/jinja/percent_format.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "text/jinja/budget.h"
#include "text/jinja/pystring.h"
#include "util/utf8.h"

namespace qinfer::jinja {

namespace {

std::string pad(std::string text, int64_t width, bool left_align, char fill = ' ') {
  auto n = static_cast<int64_t>(count_code_points(text));
  if (n >= width) return text;
  RenderBudget::check_string(static_cast<double>(text.size()) + static_cast<double>(width - n));
  std::string padding(static_cast<size_t>(width - n), fill);
  return left_align ? text + padding : padding + text;
}

// A number as Python lays it out: the sign ('-', or '+'/' ' by flag), a
// prefix (0x, 0o), then the digits; a width pads with spaces before it, or
// after it with '-', or with zeros after the sign and prefix with '0' (for
// NaN and infinity too, and with a precision, unlike C's printf).
std::string lay_out_number(bool negative, const std::string& prefix, const std::string& body, const std::string& flags,
                           int64_t width) {
  auto has = [&](char f) { return flags.find(f) != std::string::npos; };
  const std::string sign = negative ? "-" : has('+') ? "+" : has(' ') ? " " : "";
  const int64_t size = static_cast<int64_t>(sign.size() + prefix.size() + body.size());
  if (width <= size) return sign + prefix + body;
  RenderBudget::check_string(static_cast<double>(width));
  const std::string fill(static_cast<size_t>(width - size), has('-') || !has('0') ? ' ' : '0');
  if (has('-')) return sign + prefix + body + fill;
  return fill[0] == '0' ? sign + prefix + fill + body : fill + sign + prefix + body;
}

}  // namespace

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
        const bool decimal = conv == 'd' || conv == 'i' || conv == 'u';
        if (!arg->is_number() || (!decimal && arg->is_float()))
          eval_fail("%", conv, " format: ", decimal ? "a real number" : "an integer", " is required, not ",
                    arg->type_name());
        std::string body;
        bool negative = false;
        if (arg->is_float()) {  // int(x): its exact digits, whatever its size
          const double x = arg->as_float();
          if (!std::isfinite(x)) eval_fail("cannot convert float infinity or NaN to integer");
          negative = x <= -1;
          body = printf_double("%.0f", std::fabs(std::trunc(x)));
        } else {
          negative = arg->integral() < 0;
          body = int_digits(arg->integral(), decimal ? 10 : conv == 'o' ? 8 : 16, conv == 'X');
        }
        if (precision > static_cast<int64_t>(body.size()))
          body.insert(0, static_cast<size_t>(precision) - body.size(), '0');
        const bool alt = !decimal && flags.find('#') != std::string::npos;
        out += lay_out_number(negative, alt ? std::string("0") + conv : "", body, flags, width);
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!arg->is_number()) eval_fail("must be real number, not ", arg->type_name());
        const double x = arg->number();
        const std::string body =
            py_format_double(std::fabs(x), conv, precision < 0 ? 6 : precision, flags.find('#') != std::string::npos);
        out += lay_out_number(std::signbit(x) && !std::isnan(x), "", body, flags, width);
        break;
      }
      case 'c':
        if (arg->is_integral()) {
          const Int code = arg->integral();
          if (code < 0 || code > 0x10FFFF) eval_fail("%c arg not in range(0x110000)");
          if (code >= 0xD800 && code <= 0xDFFF)
            eval_fail("%c arg ", int_to_string(code), " is a surrogate, which UTF-8 cannot encode");
          std::string ch;
          utf8::append_code_point(ch, static_cast<char32_t>(arg->integral()));
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

}  // namespace qinfer::jinja
