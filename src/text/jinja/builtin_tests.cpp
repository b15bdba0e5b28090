// jinja2's tests (`x is defined`, `n is divisibleby 3`), as find_test
// (builtins.h) finds them.
#include "text/jinja/builtins.h"

#include <string>
#include <unordered_map>

#include "text/jinja/builtin_args.h"
#include "text/jinja/builtin_methods.h"

namespace qinfer::jinja {

namespace {

bool t_defined(Context&, const Value& v, CallArgs& a) {
  Params("defined", a, {});
  return !v.is_undefined();
}
bool t_undefined(Context&, const Value& v, CallArgs& a) {
  Params("undefined", a, {});
  return v.is_undefined();
}
bool t_none(Context&, const Value& v, CallArgs& a) {
  Params("none", a, {});
  return v.is_none();
}
bool t_boolean(Context&, const Value& v, CallArgs& a) {
  Params("boolean", a, {});
  return v.is_bool();
}
bool t_false(Context&, const Value& v, CallArgs& a) {
  Params("false", a, {});
  return v.is_bool() && !v.as_bool();
}
bool t_true(Context&, const Value& v, CallArgs& a) {
  Params("true", a, {});
  return v.is_bool() && v.as_bool();
}
bool t_integer(Context&, const Value& v, CallArgs& a) {
  Params("integer", a, {});
  return v.is_int();
}
bool t_float(Context&, const Value& v, CallArgs& a) {
  Params("float", a, {});
  return v.is_float();
}
bool t_number(Context&, const Value& v, CallArgs& a) {
  Params("number", a, {});
  return v.is_number();
}
bool t_string(Context&, const Value& v, CallArgs& a) {
  Params("string", a, {});
  return v.is_string();
}
bool t_mapping(Context&, const Value& v, CallArgs& a) {
  Params("mapping", a, {});
  return v.is_dict();
}
// jinja2 checks for len() and [] (Undefined has both).
bool t_sequence(Context&, const Value& v, CallArgs& a) {
  Params("sequence", a, {});
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_iterable(Context&, const Value& v, CallArgs& a) {
  Params("iterable", a, {});
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.is_generator() ||
         (v.is_object() && v.as_object().type_name == "LoopContext");
}
bool t_callable(Context&, const Value& v, CallArgs& a) {
  Params("callable", a, {});
  return v.is_function() || v.is_undefined() || (v.is_object() && v.as_object().type_name == "LoopContext");
}
// Python's `is`: None/True/False are singletons; containers compare by identity.
bool t_sameas(Context&, const Value& v, CallArgs& a) {
  Params p("sameas", a, {"other"});
  const Value& o = p.required(0);
  if (v.is_none() || o.is_none() || v.is_bool() || o.is_bool()) return v.type_name() == o.type_name() && equals(v, o);
  if (v.is_list() && o.is_list()) return &v.as_list() == &o.as_list();
  if (v.is_dict() && o.is_dict()) return &v.as_dict() == &o.as_dict();
  return v.type_name() == o.type_name() && equals(v, o);
}
bool t_escaped(Context&, const Value&, CallArgs& a) {
  Params("escaped", a, {});
  return false;
}
bool t_in(Context&, const Value& v, CallArgs& a) {
  Params p("in", a, {"seq"});
  return contains(p.required(0), v);
}
// jinja2: value % 2 == 1 (so 1.5 is neither odd nor even).
bool t_odd(Context&, const Value& v, CallArgs& a) {
  Params("odd", a, {});
  return equals(binary_op(BinaryOp::Mod, v, Value(2)), Value(1));
}
bool t_even(Context&, const Value& v, CallArgs& a) {
  Params("even", a, {});
  return equals(binary_op(BinaryOp::Mod, v, Value(2)), Value(0));
}
bool t_divisibleby(Context&, const Value& v, CallArgs& a) {
  Params p("divisibleby", a, {"num"});
  Value r = binary_op(BinaryOp::Mod, v, p.required(0));
  return equals(r, Value(0));
}
bool t_lower(Context&, const Value& v, CallArgs& a) {
  Params("lower", a, {});
  return case_test(to_str(v), true).as_bool();
}
bool t_upper(Context&, const Value& v, CallArgs& a) {
  Params("upper", a, {});
  return case_test(to_str(v), false).as_bool();
}
bool t_filter(Context&, const Value& v, CallArgs& a) {
  Params("filter", a, {});
  return v.is_string() && find_filter(v.as_string());
}
bool t_test(Context&, const Value& v, CallArgs& a) {
  Params("test", a, {});
  return v.is_string() && find_test(v.as_string());
}

template <CompareOp op>
bool t_compare(Context&, const Value& v, CallArgs& a) {
  Params p("comparison", a, {"other"});
  const Value& o = p.required(0);
  switch (op) {
    case CompareOp::Eq:
      return equals(v, o);
    case CompareOp::Ne:
      return !equals(v, o);
    case CompareOp::Lt:
      return compare(v, o) < 0;
    case CompareOp::Le:
      return compare(v, o) <= 0;
    case CompareOp::Gt:
      return compare(v, o) > 0;
    case CompareOp::Ge:
      return compare(v, o) >= 0;
    default:
      return false;
  }
}

}  // namespace

TestFn find_test(const std::string& name) {
  static const std::unordered_map<std::string, TestFn> tests = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"sequence", t_sequence},
      {"iterable", t_iterable},
      {"callable", t_callable},
      {"sameas", t_sameas},
      {"escaped", t_escaped},
      {"in", t_in},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"lower", t_lower},
      {"upper", t_upper},
      {"filter", t_filter},
      {"test", t_test},
      {"eq", t_compare<CompareOp::Eq>},
      {"equalto", t_compare<CompareOp::Eq>},
      {"==", t_compare<CompareOp::Eq>},
      {"ne", t_compare<CompareOp::Ne>},
      {"!=", t_compare<CompareOp::Ne>},
      {"lt", t_compare<CompareOp::Lt>},
      {"lessthan", t_compare<CompareOp::Lt>},
      {"<", t_compare<CompareOp::Lt>},
      {"le", t_compare<CompareOp::Le>},
      {"<=", t_compare<CompareOp::Le>},
      {"gt", t_compare<CompareOp::Gt>},
      {"greaterthan", t_compare<CompareOp::Gt>},
      {">", t_compare<CompareOp::Gt>},
      {"ge", t_compare<CompareOp::Ge>},
      {">=", t_compare<CompareOp::Ge>},
  };
  auto it = tests.find(name);
  return it == tests.end() ? nullptr : it->second;
}

}  // namespace qinfer::jinja
