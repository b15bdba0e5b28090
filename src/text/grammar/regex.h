// JSON Schema's "pattern" (an ECMA-262 regular expression) as a grammar of a
// string's contents as JSON writes them (between the quotes; each character
// one way: escaped only where JSON must). Not anchored, as JSON Schema reads
// it: without ^ and $ the match may have anything around it.
//
// Follows the syntax ECMA-262 and Python's re read alike: literals, escapes
// (\d \w \s and their negations, \t \n \r \f \v \0 \xHH \uHHHH), '.',
// classes with ranges and negation, groups ((...), (?:...), (?<name>...)),
// '|', the quantifiers * + ? {n} {n,} {n,m} (lazy ones too: the same
// strings), and ^ / $ at the start / end of a top-level alternative. Where
// the flavours differ (\d, \w, \s beyond ASCII; '.' and line breaks) it
// allows only what both match. Assertions (\b, lookaround), backreferences
// and \p{...} are refused.
#pragma once
#include <string_view>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

// `any_char`: one character of a JSON string in any of its spellings (what
// an unanchored side may hold). Throws qinfer::Error naming what it does not
// follow and where.
Expr pattern_contents(std::string_view pattern, const Expr& any_char);

}  // namespace qinfer::grammar
