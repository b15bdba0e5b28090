// GBNF, the grammar notation of llama.cpp (grammars/README.md) that vLLM's
// `grammar` structured output takes too (xgrammar's EBNF): rules
// `name ::= alternatives` with "literals" (escapes \n \r \t \\ \" \xHH
// \uHHHH \UHHHHHHHH), [character classes] (ranges, ^ negation), '.' (any
// character), (groups), '|', and * + ? {m} {m,} {m,n} {,n}; '#' comments.
// A rule may span lines (it ends where the next `name ::=` starts). The
// output is a match of the rule named root, as UTF-8 bytes.
#pragma once
#include <string_view>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

// Throws qinfer::Error naming the fault and where it is (line and column):
// a syntax error, no `root` rule, a rule used but not defined or defined
// twice, left recursion, a grammar too large to follow.
Grammar gbnf_grammar(std::string_view text);

}  // namespace qinfer::grammar
