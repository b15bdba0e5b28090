#include "text/jinja/percent_format.h"

#include <cstdio>
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
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about "%" + string here.
    std::string spec = "%";
    spec += flags;
    if (width) spec += std::to_string(width);
    if (precision >= 0) {
      spec += '.';
      spec += std::to_string(precision);
    }
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
