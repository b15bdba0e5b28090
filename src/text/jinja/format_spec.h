// Python's format(value, spec): the format-spec mini-language after the
// colon of a str.format field, "{:>10.3f}". Strings, ints (bools with a spec
// are ints), floats; other values only with an empty spec, as in Python.
#pragma once
#include <string>

#include "text/jinja/value.h"

namespace qinfer::jinja {

std::string format_with_spec(const Value& v, const std::string& spec);

}  // namespace qinfer::jinja
