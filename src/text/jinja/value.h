// The values a Jinja template computes with, modelled on the Python objects
// jinja2 sees when transformers renders a chat template: None, bool, int,
// float, str, list, tuple, dict (insertion-ordered), jinja2's Undefined,
// objects with attributes (namespace(), the `loop` variable) and callables.
// Lists and dicts are immutable once built, as in transformers' sandboxed
// environment, so sharing them between values is safe.
#pragma once
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "text/jinja/budget.h"
#include "util/error.h"

namespace qinfer::jinja {

class Value;

// Python ints are unbounded; 128 bits hold every JSON integer (up to 2^64)
// with room for arithmetic, and going beyond is an error.
using Int = __int128;
constexpr Int kIntMax = static_cast<Int>((static_cast<unsigned __int128>(1) << 127) - 1);
constexpr Int kIntMin = -kIntMax - 1;
std::string int_to_string(Int i);
// The digits of |i| in base 2, 8, 10 or 16 (capitals with `upper`), no sign.
std::string int_digits(Int i, int base, bool upper = false);

// A failure while evaluating (Python's TypeError, UndefinedError, ...). The
// evaluator catches it and rethrows a qinfer::Error that names the template
// line and column.
class EvalError : public Error {
 public:
  using Error::Error;
};

template <class... Parts>
[[noreturn]] void eval_fail(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  throw EvalError(os.str());
}

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  std::vector<std::string> field_names;  // a namedtuple's (groupby's grouper, list): items read as attributes too
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;  // insertion order, as Python dicts
  const Value* find(const Value& key) const;
  void set(Value key, Value value);  // replaces an equal key in place
};

// Attributes by name. A namespace() object is the only one templates may assign to.
struct ObjectData {
  std::string type_name;  // "Namespace", "LoopContext", ...
  bool assignable = false;
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);
};

// What jinja2's select/map/items/... filters return: a one-shot iterator.
// It is always true, has no length, and iterating it consumes it; the items
// are computed up front (so errors surface when the filter runs, where
// jinja2 raises them on first use).
struct GeneratorData {
  std::string type_name;  // "generator", "list_reverseiterator", ...
  std::string function;   // the jinja2 function that made it, for printing
  std::vector<Value> items;
  size_t next = 0;    // items before it are consumed
  std::string error;  // raised when consumed, if the filter failed
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct FunctionData {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

// jinja2's Undefined: prints as "", is false, iterates as empty; most other
// uses fail with `message`.
struct Undefined {
  std::string message;  // "'x' is undefined", "'dict object' has no attribute 'y'"
};

struct None {};

class Value {
 public:
  Value() : v_(Undefined{"value is undefined"}) {}
  Value(Undefined u) : v_(std::move(u)) {}
  Value(None) : v_(None{}) {}
  Value(bool b) : v_(b) {}
  Value(Int i) : v_(i) {}
  template <class T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, Int>, int> = 0>
  Value(T i) : v_(static_cast<Int>(i)) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) { RenderBudget::check_string(static_cast<double>(as_string().size())); }
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::shared_ptr<const ListData> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<const DictData> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<ObjectData> o) : v_(std::move(o)) {}
  Value(std::shared_ptr<const FunctionData> f) : v_(std::move(f)) {}
  Value(std::shared_ptr<GeneratorData> g) : v_(std::move(g)) {}

  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(DictData d);
  static Value function(std::string name, std::function<Value(CallArgs&)> call);
  static Value generator(std::vector<Value> items, std::string function, std::string type_name = "generator");

  bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  bool is_none() const { return std::holds_alternative<None>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<Int>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python's numbers.Number
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<const ListData>>(v_); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<const DictData>>(v_); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<ObjectData>>(v_); }
  bool is_function() const { return std::holds_alternative<std::shared_ptr<const FunctionData>>(v_); }
  bool is_generator() const { return std::holds_alternative<std::shared_ptr<GeneratorData>>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  Int as_int() const { return std::get<Int>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(v_); }
  const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(v_); }
  ObjectData& as_object() const { return *std::get<std::shared_ptr<ObjectData>>(v_); }
  const FunctionData& as_function() const { return *std::get<std::shared_ptr<const FunctionData>>(v_); }
  const Undefined& as_undefined() const { return std::get<Undefined>(v_); }
  GeneratorData& as_generator() const { return *std::get<std::shared_ptr<GeneratorData>>(v_); }

  // bool and int both count: True + 1 == 2 in Python.
  bool is_integral() const { return is_int() || is_bool(); }
  Int integral() const { return is_bool() ? Int(as_bool()) : as_int(); }
  double number() const { return is_float() ? as_float() : static_cast<double>(integral()); }

  bool truthy() const;            // Python bool(); Undefined is false
  std::string type_name() const;  // Python type name: 'int', 'str', 'NoneType', ...
  // jinja2's object_type_repr: "None", "dict object", ... (used in messages).
  std::string object_description() const;

  [[noreturn]] void fail_undefined() const { throw EvalError(as_undefined().message); }

 private:
  std::variant<Undefined, None, bool, Int, double, std::string, std::shared_ptr<const ListData>,
               std::shared_ptr<const DictData>, std::shared_ptr<ObjectData>, std::shared_ptr<const FunctionData>,
               std::shared_ptr<GeneratorData>>
      v_;
};

std::string to_str(const Value& v);           // Python str(); Undefined prints as ""
std::string repr(const Value& v);             // Python repr()
bool equals(const Value& a, const Value& b);  // Python ==
// How Python orders a and b: unordered where a NaN decides it (every <, <=,
// >, >= with NaN is false); throws EvalError for unorderable types.
std::partial_ordering compare(const Value& a, const Value& b);
// The elements a for loop visits: list items, dict keys, string characters,
// what is left of a generator (consuming it); Undefined is empty. Anything
// else throws EvalError.
std::vector<Value> iterate(const Value& v);
// len(); throws EvalError for values without a length.
int64_t length(const Value& v);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) exactly as Python formats it.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const JsonDumpOptions& options = {});

// JSON (key order kept) -> Value.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace qinfer::jinja
