// What every builtin (filter, test, global, method) shares: binding a call's
// arguments by Python's f(a, b=..., *, key=...) rules, and the errors they raise.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/context.h"

namespace qinfer::jinja {

class Params {
 public:
  Params(const std::string& function, const CallArgs& args, std::initializer_list<const char*> names)
      : function_(function), names_(names), values_(names.size(), nullptr) {
    if (args.positional.size() > names.size())
      eval_fail(function, "() takes at most ", names.size(), " argument(s) (", args.positional.size(), " given)");
    for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
    for (const auto& keyword : args.keywords) {
      const std::string& key = keyword.first;  // not a structured binding: lambdas capture it (clang 14)
      const Value& value = keyword.second;
      auto it = std::find_if(names_.begin(), names_.end(), [&](const char* n) { return key == n; });
      if (it == names_.end()) eval_fail(function, "() got an unexpected keyword argument '", key, "'");
      size_t i = static_cast<size_t>(it - names_.begin());
      if (values_[i]) eval_fail(function, "() got multiple values for argument '", key, "'");
      values_[i] = &value;
    }
  }

  bool has(size_t i) const { return values_[i] != nullptr; }
  // Missing and None both mean "use the default", as in most Python signatures.
  bool given(size_t i) const { return values_[i] && !values_[i]->is_none(); }
  const Value& required(size_t i) const {
    if (!values_[i]) eval_fail(function_, "() missing required argument '", names_[i], "'");
    return *values_[i];
  }
  Value get(size_t i, Value fallback) const { return values_[i] ? *values_[i] : std::move(fallback); }
  int64_t integer(size_t i, int64_t fallback) const {
    if (!given(i)) return fallback;
    if (!values_[i]->is_integral())
      eval_fail(function_, "(): '", names_[i], "' must be an integer, not ", values_[i]->type_name());
    Int v = values_[i]->integral();
    if (v < INT64_MIN || v > INT64_MAX) eval_fail(function_, "(): '", names_[i], "' is too large");
    return static_cast<int64_t>(v);
  }
  int64_t required_integer(size_t i) const {
    required(i);
    return integer(i, 0);
  }
  bool flag(size_t i, bool fallback) const { return has(i) ? values_[i]->truthy() : fallback; }
  std::optional<std::string> string(size_t i) const {
    if (!given(i)) return std::nullopt;
    if (!values_[i]->is_string())
      eval_fail(function_, "(): '", names_[i], "' must be a string, not ", values_[i]->type_name());
    return values_[i]->as_string();
  }

 private:
  std::string function_;
  std::vector<const char*> names_;
  std::vector<const Value*> values_;
};

inline const std::string& need_string(const Value& v, const char* what) {
  if (v.is_undefined()) v.fail_undefined();
  if (!v.is_string()) eval_fail(what, " must be a string, not ", v.type_name());
  return v.as_string();
}

[[noreturn]] inline void fail_overflow() { eval_fail("integer overflow (beyond 128 bits)"); }

}  // namespace qinfer::jinja
