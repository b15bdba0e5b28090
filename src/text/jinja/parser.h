// Builds the statement tree from tokens following jinja2's grammar and
// operator precedence (parser.py). Unknown or unsupported syntax is an Error
// naming the line and column.
#pragma once
#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace qinfer::jinja {

Body parse(const Source& source);

}  // namespace qinfer::jinja
