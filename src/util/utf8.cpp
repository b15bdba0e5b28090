#include "util/utf8.h"

#include <cstring>

#include "util/error.h"

namespace qinfer::utf8 {

Step step(std::string_view s, size_t pos) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  if (lead < 0x80) return {Step::kChar, 1, lead};
  // Well-formed sequences (Unicode Table 3-7): the lead byte fixes the length
  // and the range of the second byte, which excludes overlong forms,
  // surrogates and code points above U+10FFFF.
  int continuation;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuation = 1;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuation = 2;
    cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuation = 3;
    cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {Step::kIllFormed, 1, 0};
  }
  for (int i = 1; i <= continuation; ++i) {
    if (pos + i >= s.size()) return {Step::kTruncated, static_cast<uint8_t>(i), 0};
    const auto c = static_cast<unsigned char>(s[pos + i]);
    if (c < lo || c > hi) return {Step::kIllFormed, static_cast<uint8_t>(i), 0};
    cp = (cp << 6) | (c & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  return {Step::kChar, static_cast<uint8_t>(continuation + 1), cp};
}

void require_valid(std::string_view s, const std::string& what) {
  if (const size_t at = first_invalid(s); at != std::string_view::npos)
    fail(what, " is not valid UTF-8 (byte offset ", at, ")");
}

size_t first_invalid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    // Plain ASCII, eight bytes at a time: the common case by far.
    uint64_t word;
    if (pos + 8 <= s.size() && (std::memcpy(&word, s.data() + pos, 8), (word & 0x8080808080808080ull) == 0)) {
      pos += 8;
      continue;
    }
    const Step st = step(s, pos);
    if (st.kind != Step::kChar) return pos;
    pos += st.len;
  }
  return std::string_view::npos;
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void append_lossy(std::string& out, std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Step st = step(bytes, pos);
    if (st.kind == Step::kChar) {
      out.append(bytes.data() + pos, st.len);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
    }
    pos += st.len;
  }
}

}  // namespace qinfer::utf8
