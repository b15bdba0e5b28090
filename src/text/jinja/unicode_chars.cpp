#include "text/jinja/unicode_chars.h"

#include <unicode/casemap.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include "util/utf8.h"

namespace qinfer::jinja {

namespace {

bool has_category(char32_t c, uint32_t gc_mask) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & gc_mask) != 0; }

bool has_property(char32_t c, UProperty property) { return u_hasBinaryProperty(static_cast<UChar32>(c), property); }

int numeric_type(char32_t c) { return u_getIntPropertyValue(static_cast<UChar32>(c), UCHAR_NUMERIC_TYPE); }

bool is_ascii_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }

}  // namespace

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_py_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  return !has_category(c, U_GC_C_MASK | U_GC_Z_MASK);
}

bool is_py_alpha(char32_t c) { return c < 0x80 ? is_ascii_letter(c) : has_category(c, U_GC_L_MASK); }

bool is_py_decimal(char32_t c) { return c < 0x80 ? is_ascii_digit(c) : has_category(c, U_GC_ND_MASK); }

bool is_py_digit(char32_t c) {
  if (c < 0x80) return is_ascii_digit(c);
  const int type = numeric_type(c);
  return type == U_NT_DECIMAL || type == U_NT_DIGIT;
}

bool is_py_numeric(char32_t c) { return c < 0x80 ? is_ascii_digit(c) : numeric_type(c) != U_NT_NONE; }

bool is_py_alnum(char32_t c) { return is_py_alpha(c) || is_py_numeric(c); }

bool is_py_lower(char32_t c) { return c < 0x80 ? (c >= 'a' && c <= 'z') : has_property(c, UCHAR_LOWERCASE); }

bool is_py_upper(char32_t c) { return c < 0x80 ? (c >= 'A' && c <= 'Z') : has_property(c, UCHAR_UPPERCASE); }

bool is_py_title(char32_t c) { return c >= 0x80 && has_category(c, U_GC_LT_MASK); }

bool is_py_cased(char32_t c) { return c < 0x80 ? is_ascii_letter(c) : has_property(c, UCHAR_CASED); }

bool is_py_case_ignorable(char32_t c) { return has_property(c, UCHAR_CASE_IGNORABLE); }

bool is_py_identifier_start(char32_t c) { return c == '_' || has_property(c, UCHAR_XID_START); }

bool is_py_identifier_continue(char32_t c) { return has_property(c, UCHAR_XID_CONTINUE); }

int py_decimal_value(char32_t c) { return is_py_decimal(c) ? u_charDigitValue(static_cast<UChar32>(c)) : -1; }

void append_case_mapped(std::string& out, char32_t c, CaseMapping mapping) {
  if (c < 0x80) {
    const bool to_upper = mapping == CaseMapping::kUpper || mapping == CaseMapping::kTitle;
    if (to_upper && c >= 'a' && c <= 'z') c -= 32;
    if (!to_upper && c >= 'A' && c <= 'Z') c += 32;
    out += static_cast<char>(c);
    return;
  }
  UChar src[2];
  int32_t src_length = 0;
  U16_APPEND_UNSAFE(src, src_length, static_cast<UChar32>(c));
  UChar mapped[8];  // the longest full mapping is 3 code points
  UErrorCode status = U_ZERO_ERROR;
  int32_t length = 0;
  switch (mapping) {
    case CaseMapping::kLower:
      length = u_strToLower(mapped, 8, src, src_length, "", &status);
      break;
    case CaseMapping::kUpper:
      length = u_strToUpper(mapped, 8, src, src_length, "", &status);
      break;
    case CaseMapping::kFold:
      length = u_strFoldCase(mapped, 8, src, src_length, U_FOLD_CASE_DEFAULT, &status);
      break;
    case CaseMapping::kTitle:
      // The whole (one-character) string is the word, and its first character
      // is the one titlecased, cased or not.
      length = icu::CaseMap::toTitle("", U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_BREAK_ADJUSTMENT, nullptr, src,
                                     src_length, mapped, 8, nullptr, status);
      break;
  }
  if (U_FAILURE(status)) {  // not reached: every mapping fits; keep the character
    utf8::append_code_point(out, c);
    return;
  }
  for (int32_t i = 0; i < length;) {
    UChar32 m;
    U16_NEXT_UNSAFE(mapped, i, m);
    utf8::append_code_point(out, static_cast<char32_t>(m));
  }
}

bool is_final_sigma(const std::u32string& cs, size_t i) {
  size_t before = i;
  while (before > 0 && is_py_case_ignorable(cs[before - 1])) --before;
  if (before == 0 || !is_py_cased(cs[before - 1])) return false;
  size_t after = i + 1;
  while (after < cs.size() && is_py_case_ignorable(cs[after])) ++after;
  return after == cs.size() || !is_py_cased(cs[after]);
}

}  // namespace qinfer::jinja
