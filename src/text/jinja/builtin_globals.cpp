// The functions a chat template can call without defining them: jinja2's
// range, dict, namespace, joiner and transformers' raise_exception and
// strftime_now (add_builtin_globals, builtins.h).
#include "text/jinja/builtins.h"

#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/budget.h"
#include "text/jinja/builtin_args.h"

namespace qinfer::jinja {

namespace {

Value g_range(CallArgs& args) {
  Params p("range", args, {"start", "stop", "step"});
  if (!p.has(0)) eval_fail("range expected at least 1 argument, got 0");
  int64_t start = 0, stop = p.integer(0, 0), step = p.integer(2, 1);
  if (p.has(1)) {
    start = stop;
    stop = p.integer(1, 0);
  }
  if (step == 0) eval_fail("range() arg 3 must not be zero");
  // transformers' sandbox refuses ranges over 100,000 items.
  constexpr int64_t kMaxRange = 100000;
  double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  if (count > kMaxRange) eval_fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
  return Value::list(std::move(out));
}

// dict(mapping, **kwargs) and namespace(mapping, **kwargs) take the same arguments.
std::vector<std::pair<Value, Value>> mapping_args(const char* name, CallArgs& args) {
  if (args.positional.size() > 1) eval_fail(name, "() expected at most 1 positional argument");
  DictData d;
  if (!args.positional.empty()) {
    const Value& m = args.positional[0];
    if (m.is_dict()) {
      d = m.as_dict();
    } else {
      for (const Value& pair : iterate(m)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2)
          eval_fail(name, "() needs a mapping or a sequence of (key, value) pairs");
        d.set(pair.as_list().items[0], pair.as_list().items[1]);
      }
    }
  }
  for (auto& [k, v] : args.keywords) d.set(Value(k), v);
  return std::move(d.entries);
}

Value g_dict(CallArgs& args) {
  DictData d;
  d.entries = mapping_args("dict", args);
  return Value::dict(std::move(d));
}

Value g_namespace(CallArgs& args) {
  auto ns = std::make_shared<ObjectData>();
  ns->type_name = "Namespace";
  ns->assignable = true;
  for (auto& [k, v] : mapping_args("namespace", args)) ns->set(to_str(k), v);
  return Value(std::move(ns));
}

Value g_joiner(CallArgs& args) {
  Params p("joiner", args, {"sep"});
  std::string sep = to_str(p.get(0, Value(", ")));
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](CallArgs& a) {
    Params("joiner", a, {});
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(sep);
  });
}

Value g_raise_exception(CallArgs& args) {
  Params p("raise_exception", args, {"message"});
  eval_fail(to_str(p.required(0)));
}

Value g_strftime_now(CallArgs& args) {
  Params p("strftime_now", args, {"format"});
  const std::string& format = need_string(p.required(0), "format");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value("");
  for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
    std::string buf(size, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    if (n > 0) return Value(buf.substr(0, n));
  }
  return Value("");  // formats that produce nothing, like "%p" in some locales
}

}  // namespace

void add_builtin_globals(Scope& scope) {
  scope.set("range", Value::function("range", g_range));
  scope.set("dict", Value::function("dict", g_dict));
  scope.set("namespace", Value::function("namespace", g_namespace));
  scope.set("joiner", Value::function("joiner", g_joiner));
  scope.set("raise_exception", Value::function("raise_exception", g_raise_exception));
  scope.set("strftime_now", Value::function("strftime_now", g_strftime_now));
}

}  // namespace qinfer::jinja
