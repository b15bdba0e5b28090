// Sets of Unicode code points, and the bytes that spell them in UTF-8: what
// a pattern's classes and a GBNF grammar's character ranges become.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, overlapping and adjacent ranges merged.
CodePointRanges normalized(CodePointRanges r);
CodePointRanges united(CodePointRanges a, const CodePointRanges& b);
// `r` without surrogates (no character: UTF-8 cannot hold them).
CodePointRanges characters(const CodePointRanges& r);
// Every character not in `r`.
CodePointRanges complement(const CodePointRanges& r);

std::string utf8_encode(uint32_t code_point);

// One character of `r` (no surrogates) as its UTF-8 bytes, each way of
// spelling one an alternative: the ASCII ones as one byte set, then one
// sequence of byte sets per range of longer ones (as RE2 splits them).
std::vector<Expr> utf8_alternatives(const CodePointRanges& r);
// The same for code points lo..hi (>= 0x80, no surrogates), appended to `out`.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Expr>& out);

// Reads `digits` hex digits at text[pos] into `value` and moves pos past
// them; false when fewer are there.
bool read_hex(std::string_view text, size_t& pos, int digits, uint32_t& value);

// Reads the UTF-8 code point at text[pos] into `c` and moves pos past it;
// false when the bytes there are no UTF-8 character (cut short, a stray
// continuation byte, overlong, a surrogate, beyond U+10FFFF).
bool next_code_point(std::string_view text, size_t& pos, uint32_t& c);

}  // namespace qinfer::grammar
