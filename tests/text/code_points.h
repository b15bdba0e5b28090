// Helpers of the tests that walk every code point (the pre-tokenizer's
// classes against Oniguruma, ICU and Hugging Face itself).
#pragma once
#include <string>

#include "util/utf8.h"

namespace qinfer::test {

inline std::string utf8_of(char32_t cp) {
  std::string s;
  utf8::append_code_point(s, cp);
  return s;
}

inline bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

}  // namespace qinfer::test
