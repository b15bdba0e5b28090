// The Python methods of str, dict and list that the sandbox allows
// ("a,b".split(","), d.items(), ...), found as attributes of a value.
#pragma once
#include <optional>
#include <string>

#include "text/jinja/context.h"

namespace qinfer::jinja {

// Attributes proper (methods, object attributes), without the item fallback;
// nullopt when obj has no such attribute.
std::optional<Value> find_attribute(const Value& obj, const std::string& name);
// The Undefined that a missing attribute evaluates to.
Value missing_attribute(const Value& obj, const std::string& name);

// str.islower() (want_lower) / str.isupper(), also the `lower` / `upper` tests.
Value case_test(const std::string& self, bool want_lower);
// str.center (where 0), ljust (-1), rjust (1), also the `center` filter.
Value justify(const char* name, const std::string& self, CallArgs& args, int where);

}  // namespace qinfer::jinja
