// Python's semantics for attribute and item access, `in`, the binary
// operators and calls (declared in builtins.h).
#include "text/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "text/jinja/budget.h"
#include "text/jinja/builtin_args.h"
#include "text/jinja/builtin_methods.h"
#include "text/jinja/percent_format.h"
#include "text/jinja/pystring.h"

namespace qinfer::jinja {

namespace {

[[noreturn]] void fail_operands(const char* op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  eval_fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

// Repetition counts: Python allows any int; beyond the render budget it fails anyway.
int64_t repeat_count(Int n) { return static_cast<int64_t>(std::clamp<Int>(n, -1, int64_t{1} << 40)); }

// Python's float divmod (floatobject.c), which // and % follow.
std::pair<double, double> float_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

template <class T>
std::vector<T> repeat(const std::vector<T>& items, int64_t times) {
  std::vector<T> out;
  if (times <= 0 || items.empty()) return out;
  RenderBudget::check_list(static_cast<double>(items.size()) * static_cast<double>(times));
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return out;
}

std::string repeat_string(const std::string& s, int64_t times) {
  if (times <= 0) return "";
  RenderBudget::check_string(static_cast<double>(s.size()) * static_cast<double>(times));
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(times));
  for (int64_t i = 0; i < times; ++i) out += s;
  return out;
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (std::optional<Value> attr = find_attribute(obj, name)) return *attr;
  if (obj.is_dict())
    if (const Value* v = obj.as_dict().find(Value(name))) return *v;
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && key.is_integral()) {
    Int i = key.integral();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    } else {
      std::u32string cs = decode_utf8(obj.as_string());
      auto n = static_cast<int64_t>(cs.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return encode_utf8(cs.substr(static_cast<size_t>(i), 1));
    }
  }
  if (key.is_string()) {
    if (std::optional<Value> attr = find_attribute(obj, key.as_string())) return *attr;
    return missing_attribute(obj, key.as_string());
  }
  return Undefined{obj.object_description() + " has no element " + repr(key)};
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) eval_fail("'in <string>' requires string as left operand, not ", item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    const auto& items = container.as_list().items;
    return std::any_of(items.begin(), items.end(), [&](const Value& v) { return equals(v, item); });
  }
  if (container.is_dict()) return container.as_dict().find(item) != nullptr;
  if (container.is_generator()) {  // consumed up to and including the match, as in Python
    GeneratorData& g = container.as_generator();
    while (g.next < g.items.size())
      if (equals(g.items[g.next++], item)) return true;
    if (!g.error.empty()) throw EvalError(g.error);
    return false;
  }
  if (container.is_undefined()) return false;
  eval_fail("argument of type '", container.type_name(), "' is not iterable");
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::Concat) return to_str(a) + to_str(b);
  bool numbers = a.is_number() && b.is_number();
  bool ints = a.is_integral() && b.is_integral();
  Int r = 0;
  switch (op) {
    case BinaryOp::Add:
      if (ints) {
        if (__builtin_add_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() + b.number();
      if (a.is_string() && b.is_string()) return a.as_string() + b.as_string();
      if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
        std::vector<Value> items = a.as_list().items;
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::list(std::move(items), a.as_list().is_tuple);
      }
      if ((a.is_string() || a.is_list()) && !b.is_undefined())
        eval_fail("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name());
      fail_operands("+", a, b);
    case BinaryOp::Sub:
      if (ints) {
        if (__builtin_sub_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() - b.number();
      fail_operands("-", a, b);
    case BinaryOp::Mul:
      if (ints) {
        if (__builtin_mul_overflow(a.integral(), b.integral(), &r)) fail_overflow();
        return r;
      }
      if (numbers) return a.number() * b.number();
      if (a.is_string() && b.is_integral()) return repeat_string(a.as_string(), repeat_count(b.integral()));
      if (a.is_integral() && b.is_string()) return repeat_string(b.as_string(), repeat_count(a.integral()));
      if (a.is_list() && b.is_integral())
        return Value::list(repeat(a.as_list().items, repeat_count(b.integral())), a.as_list().is_tuple);
      if (a.is_integral() && b.is_list())
        return Value::list(repeat(b.as_list().items, repeat_count(a.integral())), b.as_list().is_tuple);
      fail_operands("*", a, b);
    case BinaryOp::Div:
      if (!numbers) fail_operands("/", a, b);
      if (b.number() == 0.0) eval_fail(ints ? "division by zero" : "float division by zero");
      return a.number() / b.number();
    case BinaryOp::FloorDiv:
      if (!numbers) fail_operands("//", a, b);
      if (ints) {
        Int x = a.integral(), y = b.integral();
        if (y == 0) eval_fail("integer division or modulo by zero");
        if (x == kIntMin && y == -1) fail_overflow();
        Int q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) --q;
        return q;
      }
      if (b.number() == 0.0) eval_fail("float floor division by zero");
      return float_divmod(a.number(), b.number()).first;
    case BinaryOp::Mod:
      if (a.is_string()) return percent_format(a.as_string(), b);
      if (!numbers) fail_operands("%", a, b);
      if (ints) {
        Int x = a.integral(), y = b.integral();
        if (y == 0) eval_fail("integer modulo by zero");
        if (y == -1) return 0;
        Int m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return m;
      }
      if (b.number() == 0.0) eval_fail("float modulo");
      return float_divmod(a.number(), b.number()).second;
    case BinaryOp::Pow: {
      if (!numbers) fail_operands("** or pow()", a, b);
      if (ints && b.integral() >= 0) {
        // Square-and-multiply; a squared base is only formed when it will be
        // used, so its overflow means the result overflows too.
        Int base = a.integral(), result = 1;
        for (Int e = b.integral(); e > 0;) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) fail_overflow();
          e >>= 1;
          if (e && __builtin_mul_overflow(base, base, &base)) fail_overflow();
        }
        return result;
      }
      double x = a.number(), y = b.number();
      if (x == 0.0 && y < 0) eval_fail("0.0 cannot be raised to a negative power");
      if (x < 0 && y != std::floor(y)) eval_fail("complex results are not supported");
      const double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) eval_fail("(34, 'Numerical result out of range')");
      return r;
    }
    default:
      eval_fail("unsupported operator");
  }
}

Value call_value(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) callee.fail_undefined();
  if (!callee.is_function()) eval_fail("'", callee.type_name(), "' object is not callable");
  return callee.as_function().call(args);
}

}  // namespace qinfer::jinja
