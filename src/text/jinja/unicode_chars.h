// Python's per-character Unicode facts behind str methods (isalpha, islower,
// upper, casefold, ...), answered from ICU's tables as Python's own
// unicodedata defines them. ICU 72 carries Unicode 15.0, as Python 3.12 does;
// an older Python differs only on what later Unicode versions changed.
#pragma once
#include <string>

namespace qinfer::jinja {

bool is_py_space(char32_t c);      // str.isspace(): bidi class WS, B or S, or category Zs
bool is_py_printable(char32_t c);  // repr() leaves it as is: not in categories C* or Z*, or ' '
bool is_py_alpha(char32_t c);      // str.isalpha(): categories Lu Ll Lt Lm Lo
bool is_py_decimal(char32_t c);    // str.isdecimal(): category Nd
bool is_py_digit(char32_t c);      // str.isdigit(): Numeric_Type Decimal or Digit
bool is_py_numeric(char32_t c);    // str.isnumeric(): any Numeric_Type
bool is_py_alnum(char32_t c);      // str.isalnum(): any of the four above
bool is_py_lower(char32_t c);      // the Lowercase property
bool is_py_upper(char32_t c);      // the Uppercase property
bool is_py_title(char32_t c);      // category Lt
bool is_py_cased(char32_t c);
bool is_py_case_ignorable(char32_t c);
bool is_py_identifier_start(char32_t c);     // XID_Start or '_'
bool is_py_identifier_continue(char32_t c);  // XID_Continue
int py_decimal_value(char32_t c);            // 0-9 for category Nd, else -1

// Appends the full case mapping of one character, without context (the
// caller decides final sigma): 'ß' upper is "SS", title "Ss", fold "ss".
enum class CaseMapping { kLower, kUpper, kTitle, kFold };
void append_case_mapped(std::string& out, char32_t c, CaseMapping mapping);

// A capital sigma at cs[i] lowers to final sigma: a cased letter precedes it
// and none follows it (case-ignorable characters skipped on both sides).
bool is_final_sigma(const std::u32string& cs, size_t i);

}  // namespace qinfer::jinja
