#include "text/grammar/code_points.h"

#include <algorithm>
#include <cctype>

namespace qinfer::grammar {

CodePointRanges normalized(CodePointRanges r) {
  std::sort(r.begin(), r.end());
  CodePointRanges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.push_back({lo, hi});
  }
  return out;
}

CodePointRanges united(CodePointRanges a, const CodePointRanges& b) {
  a.insert(a.end(), b.begin(), b.end());
  return normalized(std::move(a));
}

CodePointRanges characters(const CodePointRanges& r) {
  CodePointRanges out;
  for (const auto& [lo, hi] : r) {
    if (lo < 0xD800) out.push_back({lo, std::min<uint32_t>(hi, 0xD7FF)});
    if (hi > 0xDFFF) out.push_back({std::max<uint32_t>(lo, 0xE000), hi});
  }
  return out;
}

CodePointRanges complement(const CodePointRanges& r) {
  CodePointRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized(r)) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return characters(out);
}

std::string utf8_encode(uint32_t c) {
  if (c < 0x80) return std::string(1, static_cast<char>(c));
  if (c < 0x800) return {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  if (c < 0x10000)
    return {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
            static_cast<char>(0x80 | (c & 0x3F))};
  return {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
          static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
}

// Split until each byte position is one range (as RE2 and regex-syntax's
// utf8 sequences do).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Expr>& out) {
  for (const uint32_t max : {0x7FFu, 0xFFFFu})
    if (lo <= max && hi > max) {
      utf8_sequences(lo, max, out);
      utf8_sequences(max + 1, hi, out);
      return;
    }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      utf8_sequences(lo, lo | m, out);
      utf8_sequences((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      utf8_sequences(lo, (hi & ~m) - 1, out);
      utf8_sequences(hi & ~m, hi, out);
      return;
    }
  }
  const std::string a = utf8_encode(lo), b = utf8_encode(hi);
  std::vector<Expr> seq;
  for (size_t k = 0; k < a.size(); ++k) {
    ByteSet set;
    for (unsigned v = static_cast<unsigned char>(a[k]); v <= static_cast<unsigned char>(b[k]); ++v) set.set(v);
    seq.push_back(bytes(set));
  }
  out.push_back(sequence(std::move(seq)));
}

std::vector<Expr> utf8_alternatives(const CodePointRanges& r) {
  std::vector<Expr> alts;
  ByteSet ascii;
  for (const auto& [lo, hi] : r) {
    for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x7F); ++c) ascii.set(c);
    if (hi >= 0x80) utf8_sequences(std::max<uint32_t>(lo, 0x80), hi, alts);
  }
  if (ascii.any()) alts.insert(alts.begin(), bytes(ascii));
  return alts;
}

bool read_hex(std::string_view text, size_t& pos, int digits, uint32_t& value) {
  value = 0;
  for (int i = 0; i < digits; ++i) {
    if (pos >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[pos]))) return false;
    const char h = text[pos++];
    value = value * 16 +
            static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
  }
  return true;
}

bool next_code_point(std::string_view text, size_t& pos, uint32_t& c) {
  const auto b0 = static_cast<unsigned char>(text[pos++]);
  if (b0 < 0x80) {
    c = b0;
    return true;
  }
  if (b0 < 0xC2 || b0 > 0xF4) return false;  // a continuation byte, an overlong lead, or beyond U+10FFFF
  const int extra = b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : 1;
  c = b0 & (0x3F >> extra);
  for (int i = 0; i < extra; ++i) {
    if (pos >= text.size() || (static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) return false;
    c = (c << 6) | (static_cast<unsigned char>(text[pos++]) & 0x3F);
  }
  static constexpr uint32_t kLeast[] = {0, 0x80, 0x800, 0x10000};  // overlong below these
  return c >= kLeast[extra] && c <= kMaxCodePoint && (c < 0xD800 || c > 0xDFFF);
}

}  // namespace qinfer::grammar
