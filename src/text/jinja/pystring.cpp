#include "text/jinja/pystring.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "text/jinja/budget.h"
#include "text/jinja/unicode_chars.h"
#include "util/utf8.h"

namespace qinfer::jinja {

namespace {

// Length of the UTF-8 sequence that starts with byte b (1 for stray bytes).
size_t sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b >> 5) == 0x6) return 2;
  if ((b >> 4) == 0xE) return 3;
  if ((b >> 3) == 0x1E) return 4;
  return 1;
}

// Python's lower_ucs4 for one character of cs: final sigma looks at all of cs.
void append_lower_at(std::string& out, const std::u32string& cs, size_t i) {
  if (cs[i] == 0x03A3)
    utf8::append_code_point(out, is_final_sigma(cs, i) ? 0x03C2 : 0x03C3);
  else
    append_case_mapped(out, cs[i], CaseMapping::kLower);
}

// str.lower() of cs, each capital sigma judged in the context of cs alone.
void append_lower(std::string& out, const std::u32string& cs) {
  for (size_t i = 0; i < cs.size(); ++i) append_lower_at(out, cs, i);
}

std::string map_each(std::string_view s, CaseMapping mapping) {
  std::string out;
  for (char32_t c : decode_utf8(s)) append_case_mapped(out, c, mapping);
  return out;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = sequence_length(b);
    if (i + n > s.size()) n = 1;
    char32_t c = n == 1 ? b : (b & (0x7F >> n));
    for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(c);
    i += n;
  }
  return out;
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8::append_code_point(out, c);
  return out;
}

size_t count_code_points(std::string_view s) { return utf8::code_points(s); }

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  // Works on the bytes at both ends only: stripping a long message must not
  // decode all of it.
  std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_py_space(c); };
  size_t begin = 0, end = s.size();
  while (left && begin < end) {
    size_t n = std::min(sequence_length(static_cast<unsigned char>(s[begin])), end - begin);
    if (!strippable(decode_utf8(s.substr(begin, n))[0])) break;
    begin += n;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (!strippable(decode_utf8(s.substr(start, end - start))[0])) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    // Byte search is exact for valid UTF-8: a separator can only match at a
    // character boundary.
    if (from_right) {
      size_t end = s.size();
      while (maxsplit != 0) {
        size_t at = end >= sep->size() ? s.rfind(*sep, end - sep->size()) : std::string_view::npos;
        if (at == std::string_view::npos) break;
        parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
        --maxsplit;
      }
      parts.emplace_back(s.substr(0, end));
      return {parts.rbegin(), parts.rend()};
    }
    size_t begin = 0;
    while (maxsplit != 0) {
      size_t at = s.find(*sep, begin);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(begin, at - begin));
      begin = at + sep->size();
      --maxsplit;
    }
    parts.emplace_back(s.substr(begin));
    return parts;
  }
  // Whitespace runs: no empty parts, leading/trailing whitespace ignored.
  std::u32string cs = decode_utf8(s);
  if (from_right) {
    int64_t i = static_cast<int64_t>(cs.size());
    while (true) {
      while (i > 0 && is_py_space(cs[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit == 0) {
        parts.push_back(encode_utf8(std::u32string_view(cs).substr(0, i)));
        break;
      }
      int64_t end = i;
      while (i > 0 && !is_py_space(cs[i - 1])) --i;
      parts.push_back(encode_utf8(std::u32string_view(cs).substr(i, end - i)));
      --maxsplit;
    }
    return {parts.rbegin(), parts.rend()};
  }
  size_t i = 0;
  while (true) {
    while (i < cs.size() && is_py_space(cs[i])) ++i;
    if (i == cs.size()) break;
    if (maxsplit == 0) {  // the rest as it is, its trailing whitespace too
      parts.push_back(encode_utf8(std::u32string_view(cs).substr(i)));
      break;
    }
    size_t begin = i;
    while (i < cs.size() && !is_py_space(cs[i])) ++i;
    parts.push_back(encode_utf8(std::u32string_view(cs).substr(begin, i - begin)));
    --maxsplit;
  }
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::u32string cs = decode_utf8(s);
  std::vector<std::string> lines;
  size_t begin = 0, i = 0;
  while (i < cs.size()) {
    if (!is_line_break(cs[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    i += (cs[i] == '\r' && i + 1 < cs.size() && cs[i + 1] == '\n') ? 2 : 1;
    lines.push_back(encode_utf8(std::u32string_view(cs).substr(begin, (keepends ? i : end) - begin)));
    begin = i;
  }
  if (begin < cs.size()) lines.push_back(encode_utf8(std::u32string_view(cs).substr(begin)));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement between characters and at both ends.
    std::u32string cs = decode_utf8(s);
    for (size_t i = 0; i <= cs.size(); ++i) {
      if (count != 0) {
        out += replacement;
        --count;
        RenderBudget::check_string(static_cast<double>(out.size()));  // the result grows by each replacement
      }
      if (i < cs.size()) utf8::append_code_point(out, cs[i]);
    }
    return out;
  }
  size_t begin = 0;
  while (count != 0) {
    size_t at = s.find(old, begin);
    if (at == std::string_view::npos) break;
    out.append(s.substr(begin, at - begin));
    out.append(replacement);
    RenderBudget::check_string(static_cast<double>(out.size()));
    begin = at + old.size();
    --count;
  }
  out.append(s.substr(begin));
  return out;
}

std::string py_upper(std::string_view s) { return map_each(s, CaseMapping::kUpper); }

std::string py_lower(std::string_view s) {
  std::string out;
  append_lower(out, decode_utf8(s));
  return out;
}

std::string py_casefold(std::string_view s) { return map_each(s, CaseMapping::kFold); }

std::string py_capitalize(std::string_view s) {
  std::u32string cs = decode_utf8(s);
  std::string out;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (i == 0)
      append_case_mapped(out, cs[i], CaseMapping::kTitle);
    else
      append_lower_at(out, cs, i);
  }
  return out;
}

std::string py_title(std::string_view s) {
  std::u32string cs = decode_utf8(s);
  std::string out;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (i > 0 && is_py_cased(cs[i - 1]))
      append_lower_at(out, cs, i);
    else
      append_case_mapped(out, cs[i], CaseMapping::kTitle);
  }
  return out;
}

std::string py_swapcase(std::string_view s) {
  std::u32string cs = decode_utf8(s);
  std::string out;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (is_py_upper(cs[i]))
      append_lower_at(out, cs, i);
    else if (is_py_lower(cs[i]))
      append_case_mapped(out, cs[i], CaseMapping::kUpper);
    else
      utf8::append_code_point(out, cs[i]);
  }
  return out;
}

// item[0].upper() + item[1:].lower() for each word between runs of '-',
// whitespace, '(', '{', '[' and '<', as jinja2's do_title: each word's rest is
// lowered as a string of its own.
std::string jinja_title(std::string_view s) {
  auto separator = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c);
  };
  std::u32string cs = decode_utf8(s);
  std::string out;
  for (size_t begin = 0, end = 0; begin < cs.size(); begin = end) {
    const bool separators = separator(cs[begin]);
    end = begin + 1;
    while (end < cs.size() && separator(cs[end]) == separators) ++end;
    if (separators) {
      out += encode_utf8(std::u32string_view(cs).substr(begin, end - begin));
    } else {
      append_case_mapped(out, cs[begin], CaseMapping::kUpper);
      append_lower(out, cs.substr(begin + 1, end - begin - 1));
    }
  }
  return out;
}

std::string printf_double(const std::string& spec, double x) {
  const int n = std::max(std::snprintf(nullptr, 0, spec.c_str(), x), 0);  // < 0 only for a broken spec
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), x);
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {

// No double has more than 1074 digits after the point (767 significant):
// printf computes at most this many, the rest are zeros appended here.
constexpr int64_t kExactDigits = 1100;

// printf's %e (exponent) or %f of x to `precision` digits after the point.
std::string digits_after_point(double x, char conv, int64_t precision, bool alt) {
  const int64_t computed = std::min(precision, kExactDigits);
  std::string spec = alt ? "%#." : "%.";
  spec += std::to_string(computed);
  spec += conv;
  std::string out = printf_double(spec, x);
  if (precision > computed) {
    RenderBudget::check_string(static_cast<double>(precision));
    out.insert(std::min(out.find('e'), out.size()), static_cast<size_t>(precision - computed), '0');
  }
  return out;
}

}  // namespace

std::string py_format_double(double x, char type, int64_t precision, bool alt) {
  const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(type)));
  std::string out;
  if (!std::isfinite(x)) {
    out = std::isnan(x) ? "nan" : "inf";
  } else if (lower == 'e' || lower == 'f') {
    out = digits_after_point(x, lower, precision, alt);
  } else {
    // 'g', computed (glibc's %#g drops the zeros of a value that rounds up to
    // a power of ten: 999.9 gives 1.e+03, Python 1.00e+03). 'r' starts the
    // exponent form one digit sooner, at as many integer digits as the
    // precision, and keeps a digit after the point of the fixed form.
    const int64_t p = std::max<int64_t>(precision, 1);
    const std::string e_form = digits_after_point(x, 'e', std::min(p - 1, kExactDigits), alt);
    const int64_t exponent = std::strtoll(e_form.c_str() + e_form.find('e') + 1, nullptr, 10);
    const bool use_exponent = exponent < -4 || exponent >= (lower == 'r' ? p - 1 : p);
    out = digits_after_point(x, use_exponent ? 'e' : 'f', use_exponent ? p - 1 : p - 1 - exponent, alt);
    if (!alt) {  // trailing zeros of the digits go, then a bare point
      const size_t end = std::min(out.find('e'), out.size());
      if (out.find('.') < end) {
        size_t keep = out.find_last_not_of('0', end - 1);
        if (out[keep] == '.') --keep;
        out.erase(keep + 1, end - keep - 1);
      }
    }
    if (lower == 'r' && !use_exponent && out.find('.') == std::string::npos) out += ".0";
  }
  if (type == 'E' || type == 'F' || type == 'G')
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, the same digits Python's repr picks.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  size_t e_at = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_at))
    if (c != '.') digits += c;
  int exponent = std::stoi(std::string(sci.substr(e_at + 1)));
  int decpt = exponent + 1;  // the value is 0.<digits> * 10^decpt
  int ndigits = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (ndigits > 1) out.append(".").append(digits, 1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out.append(exp_buf);
  }
  if (decpt <= 0) {
    out.append("0.").append(static_cast<size_t>(-decpt), '0').append(digits);
  } else if (decpt >= ndigits) {
    out.append(digits).append(static_cast<size_t>(decpt - ndigits), '0').append(".0");
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt)).append(".").append(digits, static_cast<size_t>(decpt));
  }
  return out;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode_utf8(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_py_printable(c)) {
      utf8::append_code_point(out, c);
    } else {
      char buf[16];
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += quote;
  return out;
}

SliceBounds slice_bounds(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step,
                         int64_t length) {
  SliceBounds b{0, 0, step.value_or(1)};
  bool backwards = b.step < 0;
  int64_t lower = backwards ? -1 : 0;
  int64_t upper = backwards ? length - 1 : length;
  auto clamp = [&](std::optional<int64_t> v, int64_t if_missing) {
    if (!v) return if_missing;
    int64_t i = *v < 0 ? *v + length : *v;
    return i < lower ? lower : (i > upper ? upper : i);
  };
  b.start = clamp(start, backwards ? upper : lower);
  b.stop = clamp(stop, backwards ? lower : upper);
  return b;
}

std::vector<int64_t> SliceBounds::indices() const {
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

}  // namespace qinfer::jinja
