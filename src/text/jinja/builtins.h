// What a template can call without defining it: jinja2's filters and tests,
// the globals transformers provides (range, dict, namespace, joiner,
// raise_exception, strftime_now), the Python methods of str/dict/list the
// sandbox allows, and Python's semantics for attribute/item access and `in`.
// One file per kind: builtin_filters.cpp, builtin_tests.cpp,
// builtin_globals.cpp, builtin_methods.cpp, builtin_operators.cpp (with
// percent_format.cpp for Python's "%" formatting of strings).
#pragma once
#include <string>

#include "text/jinja/ast.h"
#include "text/jinja/context.h"

namespace qinfer::jinja {

FilterFn find_filter(const std::string& name);  // nullptr when jinja2 has no such filter here
TestFn find_test(const std::string& name);      // nullptr when unknown
void add_builtin_globals(Scope& scope);

// obj.name: methods and attributes first, then obj["name"]; Undefined when missing.
Value get_attribute(const Value& obj, const std::string& name);
// obj[key]: items first, then attributes for string keys; Undefined when missing.
Value get_item(const Value& obj, const Value& key);
// item in container
bool contains(const Value& container, const Value& item);
// Python's binary operators (not `and`/`or`, which short-circuit in the evaluator).
Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value call_value(const Value& callee, CallArgs& args);

}  // namespace qinfer::jinja
