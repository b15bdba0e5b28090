// JSON Schema's "pattern" (an ECMA-262 regular expression) as a grammar of a
// string's contents as JSON writes them (between the quotes; each character
// one way: escaped only where JSON must). JSON Schema does not anchor a
// pattern: a string holding a match anywhere is valid. The grammar writes
// the match first (as if anchored with ^) and, without $, anything after it.
//
// Follows the syntax ECMA-262 and Python's re read alike: literals, escapes
// (\d \w \s and their negations, \t \n \r \f \v \0 \xHH \uHHHH but
// surrogates), '.', classes with ranges and negation, groups ((...),
// (?:...)), '|', the quantifiers * + ? {n} {n,} {n,m} (lazy ones too: the
// same strings), and ^ / $ at the start / end of a top-level alternative.
// Where the flavours differ (\d, \w, \s beyond ASCII; '.' and line breaks)
// it allows only what both match; a character beyond the BMP is one, as
// Python and ECMA-262's u mode (Ajv's) read it. Assertions (\b, lookaround),
// backreferences, named groups, \p{...}, repeats of what may match nothing
// and groups nested past 64 levels are refused.
#pragma once
#include <cstdint>
#include <string_view>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

constexpr uint64_t kUnboundedLength = UINT64_MAX;

struct PatternGrammar {
  Expr contents;
  uint64_t min_length, max_length;  // in characters, of every match it writes (kUnboundedLength: none)
};

// `any_char`: one character of a JSON string in any of its spellings (what
// an unanchored end may hold). Throws qinfer::Error naming what it does not
// follow and where.
PatternGrammar pattern_contents(std::string_view pattern, const Expr& any_char);

// vLLM's `regex` structured output: a text that is a match as a whole (as
// xgrammar reads it: '^' and '$' at its ends change nothing), its characters
// as UTF-8 bytes. The same syntax, and the same refusals.
Grammar regex_grammar(std::string_view regex);

}  // namespace qinfer::grammar
