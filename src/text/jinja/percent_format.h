// Python's printf-style formatting, "%s and %d" % (a, b): the `%` operator on
// a string and the `format` filter.
#pragma once
#include <string>

#include "text/jinja/value.h"

namespace qinfer::jinja {

// fmt % args: args is a tuple (one value per conversion), a dict (for
// %(name)s) or any other value (a single conversion).
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace qinfer::jinja
