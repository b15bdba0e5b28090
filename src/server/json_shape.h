// What parsing a JSON text costs, checked in one pass before it: nesting
// (copying or printing a value recurses once per level, and a text of a
// million '[' would overflow the stack) and the members of each object
// (ordered_json finds each key by a linear search, so an object of n members
// costs n^2 / 2 comparisons). The depth check nlohmann offers, a parser
// callback, rescans the parent after each object: quadratic in an array of
// objects. Request bodies and the JSON a model writes (tool call arguments)
// are both held to it.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace qinfer::server {

// What is wrong ("is nested deeper than 128 levels", ...), or nullopt when
// the text is within bounds (valid JSON or not: the parser judges that).
std::optional<std::string> json_shape_problem(std::string_view text);

}  // namespace qinfer::server
