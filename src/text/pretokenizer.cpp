#include "text/pretokenizer.h"

#include "text/unicode_classes.h"
#include "util/utf8.h"

namespace qinfer {
namespace {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kSpace;

bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }
bool is_other(uint8_t flags) { return (flags & (kLetter | kNumber | kSpace)) == 0; }

// Valid UTF-8 read one code point at a time, with its class flags.
class Scanner {
 public:
  explicit Scanner(std::string_view text)
      : data_(reinterpret_cast<const unsigned char*>(text.data())),
        size_(text.size()),
        table_(unicode::CodePointTable::get()) {}

  size_t size() const { return size_; }
  // The code point at pos (< size()); sets `len` to its byte length.
  char32_t at(size_t pos, int& len) const {
    if (data_[pos] < 0x80) {
      len = 1;
      return data_[pos];
    }
    return utf8::decode_valid(data_ + pos, len);
  }
  uint8_t flags(char32_t cp) const { return table_.flags(cp); }

  // End of the run of code points from `pos` whose flags satisfy `keep`.
  template <class Keep>
  size_t run_end(size_t pos, Keep keep) const {
    while (pos < size_) {
      int len;
      if (!keep(flags(at(pos, len)))) break;
      pos += len;
    }
    return pos;
  }
  size_t newlines_end(size_t pos) const {
    while (pos < size_ && is_newline(data_[pos])) ++pos;
    return pos;
  }

 private:
  const unsigned char* data_;
  size_t size_;
  const unicode::CodePointTable& table_;
};

// (?i:'s|'t|'re|'ve|'m|'ll|'d) after the apostrophe at pos - 1: the end of
// the contraction, or 0. Under Oniguruma's case folding the only non-ASCII
// code point that folds to one of these letters is U+017F LONG S (-> 's').
size_t contraction_end(const Scanner& s, size_t pos) {
  if (pos >= s.size()) return 0;
  int len;
  char32_t c = s.at(pos, len);
  if (c == 0x17F) return pos + len;
  if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return pos + 1;
  const char second = c == 'r' ? 'e' : c == 'v' ? 'e' : c == 'l' ? 'l' : 0;
  if (second == 0 || pos + 1 >= s.size()) return 0;
  char32_t c2 = s.at(pos + 1, len);
  if (c2 >= 'A' && c2 <= 'Z') c2 += 'a' - 'A';
  return c2 == char32_t(second) ? pos + 2 : 0;
}

}  // namespace

size_t qwen2_piece_end(std::string_view text, size_t pos) {
  const Scanner s(text);
  const auto letter = [](uint8_t f) { return (f & kLetter) != 0; };
  const auto space = [](uint8_t f) { return (f & kSpace) != 0; };

  int len0;
  const char32_t c0 = s.at(pos, len0);
  const uint8_t f0 = s.flags(c0);
  const size_t next = pos + len0;

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c0 == '\'') {
    if (size_t end = contraction_end(s, next)) return end;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (f0 & kLetter) return s.run_end(next, letter);
  int len1 = 0;
  const char32_t c1 = next < s.size() ? s.at(next, len1) : 0;
  const uint8_t f1 = next < s.size() ? s.flags(c1) : 0;
  if (!is_newline(c0) && !(f0 & kNumber) && (f1 & kLetter)) return s.run_end(next + len1, letter);
  // \p{N}
  if (f0 & kNumber) return next;
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  if (is_other(f0)) return s.newlines_end(s.run_end(next, is_other));
  if (c0 == ' ' && next < s.size() && is_other(f1)) return s.newlines_end(s.run_end(next + len1, is_other));

  // c0 is whitespace. Find the whitespace run, its last newline and its last code point.
  size_t after_last_newline = 0, last_start = pos, end = pos;
  while (end < s.size()) {
    int len;
    const char32_t c = s.at(end, len);
    if (!space(s.flags(c))) break;
    if (is_newline(c)) after_last_newline = end + len;
    last_start = end;
    end += len;
  }
  // \s*[\r\n]+ : \s* backs off to the last newline of the run.
  if (after_last_newline != 0) return after_last_newline;
  // \s+(?!\S) : the whole run at the end of the text, else the run less its
  // last code point; a single space before a non-space falls through to \s+.
  if (end == s.size() || last_start == pos) return end;
  return last_start;
}

}  // namespace qinfer
