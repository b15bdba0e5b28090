// JSON numbers within bounds (JSON Schema's minimum, maximum,
// exclusiveMinimum, exclusiveMaximum) as grammars: a range of values becomes
// ranges of digit strings, as llama.cpp's json-schema-to-grammar builds them.
// Integers are written as JSON writes them (no leading zeros, no "-0"), at
// most `max_digits` digits; numbers with a fraction have no exponent.
#pragma once
#include <cstdint>
#include <optional>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

struct NumberBound {
  int64_t value;
  bool exclusive = false;
};

// Integers n with lower <= n <= upper (< / > where exclusive); an absent
// bound is open. Throws qinfer::Error when no integer lies between them.
Expr integers_between(std::optional<NumberBound> lower, std::optional<NumberBound> upper, uint32_t max_digits);

// Numbers x (integers, or with a fraction of digits) within the bounds, which
// are integers within +-2^53, read as doubles (Python's json, JavaScript) or
// exactly: a number with a fraction has at most 15 digits, so that the double
// nearest it lies within the bounds too. Throws qinfer::Error when no number
// lies between them.
Expr numbers_between(std::optional<NumberBound> lower, std::optional<NumberBound> upper, uint32_t max_digits);

}  // namespace qinfer::grammar
