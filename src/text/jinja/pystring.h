// Python `str` semantics over UTF-8 std::string: Jinja templates call Python
// string methods (strip, split, startswith, ...) and print values the way
// Python's str()/repr() do, so the renderer must agree with Python on what a
// character, a whitespace character and a float's text are.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::jinja {

// UTF-8 <-> code points. Input is assumed valid UTF-8 (JSON parsers and the
// template reader validate it with utf8::first_invalid, util/utf8.h).
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
size_t count_code_points(std::string_view s);

// str.strip/lstrip/rstrip: chars == nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split/rsplit: sep == nullopt splits on whitespace runs; maxsplit < 0 is unlimited.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_casefold(std::string_view s);
std::string py_capitalize(std::string_view s);  // first character titlecased, the rest lower
std::string py_title(std::string_view s);       // str.title(): titlecase after every uncased character
std::string py_swapcase(std::string_view s);
// Jinja's `title` filter: upper-case the first letter after '-', whitespace, '(', '{', '[', '<'.
std::string jinja_title(std::string_view s);

// repr() of a float (shortest round-trip digits, '1e-07', '100.0', 'inf', 'nan').
std::string py_float_repr(double x);
// snprintf of one double with a printf spec ("%.3e"), whatever its length.
std::string printf_double(const std::string& spec, double x);
// A double >= 0 (or NaN) as Python formats it with type e, E, f, F, g, G or r
// (format() without a type but with a precision), a precision and the
// alternate form (#); inf and nan in capitals for E, F, G.
std::string py_format_double(double x, char type, int64_t precision, bool alt);
// repr() of a str: quotes chosen like Python, non-printables escaped.
std::string py_str_repr(std::string_view s);

// slice.indices(length): normalises start/stop/step (step != 0) for a sequence of `length`.
struct SliceBounds {
  int64_t start, stop, step;
  std::vector<int64_t> indices() const;
};
SliceBounds slice_bounds(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step,
                         int64_t length);

}  // namespace qinfer::jinja
