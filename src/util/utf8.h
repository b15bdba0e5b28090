// UTF-8 as the tokenizer and the template engine need it: the one encoder of
// code points; one decoding step that tells a complete character from an
// ill-formed byte run and from a sequence cut off by the end of the input;
// validation with the offset of the first bad byte; and lossy
// decoding that replaces ill-formed runs with U+FFFD exactly as Rust's
// String::from_utf8_lossy does (Hugging Face tokenizers decodes with it): one
// U+FFFD per maximal subpart of an ill-formed sequence (Unicode 15, 3.9.6).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer::utf8 {

struct Step {
  enum Kind : uint8_t {
    kChar,       // a well-formed character: `len` bytes, code point `cp`
    kIllFormed,  // `len` bytes (1..3) that can never start a character: one U+FFFD
    kTruncated,  // `len` bytes that start a character the input ends inside
  };
  Kind kind;
  uint8_t len;
  char32_t cp;
};

// Decodes the sequence that starts at s[pos] (pos < s.size()).
Step step(std::string_view s, size_t pos);

// Offset of the first byte of the first ill-formed or truncated sequence, or
// std::string_view::npos when `s` is valid UTF-8.
size_t first_invalid(std::string_view s);

// Error "<what> is not valid UTF-8 (byte offset N)" unless `s` is valid.
void require_valid(std::string_view s, const std::string& what);

// Characters as Python counts them in decoded text: every byte but UTF-8's
// continuation bytes starts one.
inline size_t code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Appends `bytes` decoded like String::from_utf8_lossy.
void append_lossy(std::string& out, std::string_view bytes);

void append_code_point(std::string& out, char32_t cp);

// Decodes the character at p in text already known to be valid UTF-8.
inline char32_t decode_valid(const unsigned char* p, int& len) {
  unsigned char b = p[0];
  if (b < 0x80) {
    len = 1;
    return b;
  }
  if (b < 0xE0) {
    len = 2;
    return (char32_t(b & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (b < 0xF0) {
    len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

}  // namespace qinfer::utf8
