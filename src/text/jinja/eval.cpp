// Evaluation of expression nodes and rendering of statement nodes, with
// jinja2's semantics: Undefined for missing names and attributes, Python
// truthiness and operators, a fresh scope per loop iteration.
#include <algorithm>
#include <unordered_set>

#include "text/jinja/ast.h"
#include "text/jinja/builtins.h"
#include "text/jinja/context.h"
#include "text/jinja/pystring.h"

namespace qinfer::jinja {

namespace {

// Each nested macro call costs a few dozen C++ frames; this keeps a runaway
// recursive macro an error rather than a stack overflow.
constexpr int kMaxCallDepth = 100;

std::string render_to_string(const Body& body, Context& ctx) {
  std::string out;
  execute_body(body, ctx, out);
  return out;
}

Value apply_filters(const std::vector<std::unique_ptr<FilterExpr>>& filters, Context& ctx, Value v) {
  for (const auto& f : filters) v = f->apply(ctx, v);
  return v;
}

}  // namespace

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get())
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

Value Expr::evaluate(Context& ctx) const {
  try {
    RenderBudget::step();
    return eval(ctx);
  } catch (const EvalError& e) {
    ctx.source.fail_at(offset, e.what());
  }
}

Flow Stmt::execute(Context& ctx, std::string& out) const {
  try {
    RenderBudget::step();
    const Flow flow = render(ctx, out);
    RenderBudget::check_output(out.size());
    return flow;
  } catch (const EvalError& e) {
    ctx.source.fail_at(offset, e.what());
  }
}

Flow execute_body(const Body& body, Context& ctx, std::string& out) {
  for (const auto& stmt : body) {
    Flow flow = stmt->execute(ctx, out);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

CallArgs ArgExprs::evaluate(Context& ctx) const {
  CallArgs args;
  for (const auto& e : positional) args.positional.push_back(e->evaluate(ctx));
  for (const auto& [name, e] : keywords) args.keywords.emplace_back(name, e->evaluate(ctx));
  return args;
}

// ---- expressions ----

Value ConstExpr::eval(Context&) const { return value; }

Value NameExpr::eval(Context& ctx) const {
  if (const Value* v = ctx.scope->lookup(name)) return *v;
  return Undefined{"'" + name + "' is undefined"};
}

Value ListExpr::eval(Context& ctx) const {
  std::vector<Value> values;
  values.reserve(items.size());
  for (const auto& e : items) values.push_back(e->evaluate(ctx));
  return Value::list(std::move(values), is_tuple);
}

Value DictExpr::eval(Context& ctx) const {
  DictData d;
  for (const auto& [k, v] : entries) {
    Value key = k->evaluate(ctx);
    if (key.is_list() && !key.as_list().is_tuple) eval_fail("unhashable type: 'list'");
    if (key.is_dict() || key.is_undefined()) eval_fail("unhashable type: '", key.type_name(), "'");
    d.set(std::move(key), v->evaluate(ctx));
  }
  return Value::dict(std::move(d));
}

Value GetAttrExpr::eval(Context& ctx) const { return get_attribute(object->evaluate(ctx), name); }

Value GetItemExpr::eval(Context& ctx) const { return get_item(object->evaluate(ctx), key->evaluate(ctx)); }

Value SliceExpr::eval(Context& ctx) const {
  Value obj = object->evaluate(ctx);
  auto bound = [&](const ExprPtr& e) -> std::optional<int64_t> {
    if (!e) return std::nullopt;
    Value v = e->evaluate(ctx);
    if (v.is_none()) return std::nullopt;
    if (!v.is_integral()) eval_fail("slice indices must be integers or None or have an __index__ method");
    // Python clamps slice bounds to the sequence, so clamping to int64 first changes nothing.
    return static_cast<int64_t>(std::clamp<Int>(v.integral(), INT64_MIN, INT64_MAX));
  };
  std::optional<int64_t> lo = bound(start), hi = bound(stop), by = bound(step);
  if (by && *by == 0) eval_fail("slice step cannot be zero");
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_string()) {
    std::u32string cs = decode_utf8(obj.as_string());
    std::u32string out;
    for (int64_t i : slice_bounds(lo, hi, by, static_cast<int64_t>(cs.size())).indices()) out += cs[i];
    return encode_utf8(out);
  }
  if (obj.is_list()) {
    const ListData& l = obj.as_list();
    std::vector<Value> out;
    for (int64_t i : slice_bounds(lo, hi, by, static_cast<int64_t>(l.items.size())).indices())
      out.push_back(l.items[i]);
    return Value::list(std::move(out), l.is_tuple);
  }
  // jinja2 subscripts slices directly, so Python's own errors surface.
  if (obj.is_dict()) eval_fail("unhashable type: 'slice'");
  eval_fail("'", obj.type_name(), "' object is not subscriptable");
}

Value CallExpr::eval(Context& ctx) const {
  Value f = callee->evaluate(ctx);
  CallArgs a = args.evaluate(ctx);
  return call_value(f, a);
}

Value FilterExpr::eval(Context& ctx) const { return apply(ctx, value->evaluate(ctx)); }

Value FilterExpr::apply(Context& ctx, const Value& input) const {
  if (!fn) eval_fail("no filter named '", name, "'");
  CallArgs a = args.evaluate(ctx);
  try {
    return fn(ctx, input, a);
  } catch (const EvalError& e) {
    eval_fail("filter '", name, "': ", e.what());
  }
}

Value TestExpr::eval(Context& ctx) const {
  if (!fn) eval_fail("no test named '", name, "'");
  Value v = value->evaluate(ctx);
  CallArgs a = args.evaluate(ctx);
  return fn(ctx, v, a) != negated;
}

Value UnaryExpr::eval(Context& ctx) const {
  Value v = operand->evaluate(ctx);
  if (op == UnaryOp::Not) return !v.truthy();
  if (v.is_undefined()) v.fail_undefined();
  const char* symbol = op == UnaryOp::Neg ? "-" : "+";
  if (!v.is_number()) eval_fail("bad operand type for unary ", symbol, ": '", v.type_name(), "'");
  if (op == UnaryOp::Pos) return v.is_bool() ? Value(v.integral()) : v;
  if (v.is_float()) return -v.as_float();
  if (v.integral() == kIntMin) eval_fail("integer overflow (beyond 128 bits)");
  return -v.integral();
}

Value BinaryExpr::eval(Context& ctx) const {
  Value a = left->evaluate(ctx);
  if (op == BinaryOp::And) return a.truthy() ? right->evaluate(ctx) : a;
  if (op == BinaryOp::Or) return a.truthy() ? a : right->evaluate(ctx);
  return binary_op(op, a, right->evaluate(ctx));
}

Value CompareExpr::eval(Context& ctx) const {
  Value a = first->evaluate(ctx);
  for (const auto& [op, e] : rest) {
    Value b = e->evaluate(ctx);
    bool ok = false;
    switch (op) {
      case CompareOp::Eq:
        ok = equals(a, b);
        break;
      case CompareOp::Ne:
        ok = !equals(a, b);
        break;
      case CompareOp::Lt:
        ok = compare(a, b) < 0;
        break;
      case CompareOp::Le:
        ok = compare(a, b) <= 0;
        break;
      case CompareOp::Gt:
        ok = compare(a, b) > 0;
        break;
      case CompareOp::Ge:
        ok = compare(a, b) >= 0;
        break;
      case CompareOp::In:
        ok = contains(b, a);
        break;
      case CompareOp::NotIn:
        ok = !contains(b, a);
        break;
    }
    if (!ok) return false;
    a = std::move(b);
  }
  return true;
}

Value CondExpr::eval(Context& ctx) const {
  if (cond->evaluate(ctx).truthy()) return then->evaluate(ctx);
  if (otherwise) return otherwise->evaluate(ctx);
  return Undefined{"the inline if-expression evaluated to false and no else section was defined"};
}

// ---- statements ----

Flow TextStmt::render(Context&, std::string& out) const {
  out += text;
  return Flow::Normal;
}

Flow OutputStmt::render(Context& ctx, std::string& out) const {
  out += to_str(expr->evaluate(ctx));
  return Flow::Normal;
}

Flow IfStmt::render(Context& ctx, std::string& out) const {
  for (const auto& [test, body] : branches)
    if (test->evaluate(ctx).truthy()) return execute_body(body, ctx, out);
  return execute_body(otherwise, ctx, out);
}

namespace {

// Whether `target` is inside v; `seen` holds the containers already walked
// (values share them, so a tree walk could take 2^depth paths).
bool reaches(const Value& v, const ObjectData* target, std::unordered_set<const void*>& seen) {
  const void* container = v.is_object() ? static_cast<const void*>(&v.as_object())
                          : v.is_list() ? static_cast<const void*>(&v.as_list())
                          : v.is_dict() ? static_cast<const void*>(&v.as_dict())
                                        : nullptr;
  if (!container || !seen.insert(container).second) return false;
  NestedValueLevel level;
  if (v.is_object()) {
    if (&v.as_object() == target) return true;
    for (const auto& [k, attr] : v.as_object().attrs)
      if (reaches(attr, target, seen)) return true;
  } else if (v.is_list()) {
    for (const Value& item : v.as_list().items)
      if (reaches(item, target, seen)) return true;
  } else {
    for (const auto& [k, item] : v.as_dict().entries)
      if (reaches(k, target, seen) || reaches(item, target, seen)) return true;
  }
  return false;
}

}  // namespace

void Target::assign(Context& ctx, const Value& value) const {
  if (!attribute.empty()) {
    const Value* ns = ctx.scope->lookup(name);
    if (!ns || !ns->is_object() || !ns->as_object().assignable)
      eval_fail("cannot assign attribute '", attribute, "' on non-namespace object '", name, "'");
    // Only objects are mutable, so only this assignment can close a cycle
    // (which printing would follow forever).
    std::unordered_set<const void*> seen;
    if (reaches(value, &ns->as_object(), seen)) eval_fail("a namespace cannot contain itself");
    ns->as_object().set(attribute, value);
  } else if (is_tuple) {
    if (!value.is_list() && !value.is_dict() && !value.is_string() && !value.is_generator())
      eval_fail("cannot unpack non-iterable ", value.type_name(), " object");
    std::vector<Value> items = iterate(value);
    if (items.size() > elements.size()) eval_fail("too many values to unpack (expected ", elements.size(), ")");
    if (items.size() < elements.size())
      eval_fail("not enough values to unpack (expected ", elements.size(), ", got ", items.size(), ")");
    for (size_t i = 0; i < items.size(); ++i) elements[i].assign(ctx, items[i]);
  } else {
    ctx.scope->set(name, value);
  }
}

namespace {

// The `loop` variable of one iteration (jinja2's LoopContext).
Value make_loop_object(const std::vector<Value>& items, size_t i, const std::shared_ptr<Value>& last_changed) {
  auto loop = std::make_shared<ObjectData>();
  loop->type_name = "LoopContext";
  auto n = static_cast<int64_t>(items.size());
  auto k = static_cast<int64_t>(i);
  loop->attrs = {
      {"index0", k},
      {"index", k + 1},
      {"revindex0", n - k - 1},
      {"revindex", n - k},
      {"first", i == 0},
      {"last", k == n - 1},
      {"length", n},
      {"depth0", 0},
      {"depth", 1},
      {"previtem", i > 0 ? items[i - 1] : Value(Undefined{"there is no previous item"})},
      {"nextitem", k + 1 < n ? items[i + 1] : Value(Undefined{"there is no next item"})},
  };
  loop->attrs.emplace_back("cycle", Value::function("loop.cycle", [k](CallArgs& args) {
                             if (args.positional.empty()) eval_fail("no items for cycling given");
                             return args.positional[static_cast<size_t>(k) % args.positional.size()];
                           }));
  loop->attrs.emplace_back("changed", Value::function("loop.changed", [last_changed](CallArgs& args) {
                             Value now = Value::list(args.positional);
                             if (!last_changed->is_undefined() && equals(*last_changed, now)) return Value(false);
                             *last_changed = std::move(now);
                             return Value(true);
                           }));
  return Value(std::move(loop));
}

}  // namespace

Flow ForStmt::render(Context& ctx, std::string& out) const {
  Value seq = iterable->evaluate(ctx);
  std::vector<Value> items = iterate(seq);
  if (filter) {
    // `for x in xs if cond`: cond sees the loop target but not `loop`.
    std::vector<Value> kept;
    for (Value& item : items) {
      ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
      target.assign(ctx, item);
      if (filter->evaluate(ctx).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  auto last_changed = std::make_shared<Value>(Undefined{});
  for (size_t i = 0; i < items.size(); ++i) {
    RenderBudget::step();  // an iteration costs a step even when its body is empty
    ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
    target.assign(ctx, items[i]);
    ctx.scope->set("loop", make_loop_object(items, i, last_changed));
    shadow(*ctx.scope, body_shadowed);
    if (execute_body(body, ctx, out) == Flow::Break) break;
  }
  if (items.empty()) {
    ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
    shadow(*ctx.scope, otherwise_shadowed);
    execute_body(otherwise, ctx, out);
  }
  return Flow::Normal;
}

Flow SetStmt::render(Context& ctx, std::string&) const {
  target.assign(ctx, value->evaluate(ctx));
  return Flow::Normal;
}

Flow SetBlockStmt::render(Context& ctx, std::string&) const {
  std::string text;
  {
    ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
    shadow(*ctx.scope, shadowed);
    text = render_to_string(body, ctx);
  }
  target.assign(ctx, apply_filters(filters, ctx, Value(std::move(text))));
  return Flow::Normal;
}

namespace {

Value call_macro(const MacroStmt& m, Context& ctx, const std::shared_ptr<Scope>& closure, CallArgs& args) {
  if (ctx.call_depth >= kMaxCallDepth) eval_fail("macro calls nested more than ", kMaxCallDepth, " deep");
  size_t n = m.params.size();
  if (args.positional.size() > n && !m.takes_varargs)
    eval_fail("macro '", m.name, "' takes not more than ", n, " argument(s)");
  auto scope = std::make_shared<Scope>(closure);
  std::vector<bool> given(n, false);
  for (size_t i = 0; i < n && i < args.positional.size(); ++i) {
    scope->set(m.params[i].first, args.positional[i]);
    given[i] = true;
  }
  DictData extra_keywords;
  for (auto& keyword : args.keywords) {
    const std::string& key = keyword.first;  // not a structured binding: the lambda captures it (clang 14)
    Value& value = keyword.second;
    auto it = std::find_if(m.params.begin(), m.params.end(), [&](const auto& p) { return p.first == key; });
    if (it == m.params.end()) {
      if (!m.takes_kwargs) eval_fail("macro '", m.name, "' takes no keyword argument '", key, "'");
      extra_keywords.set(Value(key), value);
      continue;
    }
    size_t i = static_cast<size_t>(it - m.params.begin());
    if (given[i]) eval_fail("macro '", m.name, "' got multiple values for argument '", key, "'");
    scope->set(key, value);
    given[i] = true;
  }
  ScopeGuard guard(ctx, scope);
  for (size_t i = 0; i < n; ++i) {
    if (given[i]) continue;
    const auto& [name, default_value] = m.params[i];
    scope->set(name, default_value ? default_value->evaluate(ctx)
                                   : Value(Undefined{"parameter '" + name + "' was not provided"}));
  }
  if (m.takes_varargs) {
    std::vector<Value> extra;
    for (size_t i = n; i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
    scope->set("varargs", Value::list(std::move(extra), true));
  }
  if (m.takes_kwargs) scope->set("kwargs", Value::dict(std::move(extra_keywords)));
  shadow(*scope, m.shadowed);
  ++ctx.call_depth;
  struct DepthRestore {
    int& depth;
    ~DepthRestore() { --depth; }
  } restore{ctx.call_depth};
  return render_to_string(m.body, ctx);
}

}  // namespace

Flow MacroStmt::render(Context& ctx, std::string&) const {
  // The macro sees the scope it was defined in, as a closure does. The scope
  // holds the macro, so the macro holds the scope weakly (no reference cycle).
  std::weak_ptr<Scope> closure = ctx.scope;
  Context* context = &ctx;  // a macro value never outlives the render call
  ctx.scope->set(name, Value::function(name, [this, closure, context](CallArgs& args) {
                   std::shared_ptr<Scope> scope = closure.lock();
                   if (!scope) eval_fail("macro '", name, "' was called after the block that defined it ended");
                   return call_macro(*this, *context, scope, args);
                 }));
  return Flow::Normal;
}

Flow FilterBlockStmt::render(Context& ctx, std::string& out) const {
  std::string text;
  {
    ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
    shadow(*ctx.scope, shadowed);
    text = render_to_string(body, ctx);
  }
  out += to_str(apply_filters(filters, ctx, Value(std::move(text))));
  return Flow::Normal;
}

Flow ScopeStmt::render(Context& ctx, std::string& out) const {
  std::vector<Value> values;
  for (const auto& [target, e] : assignments) values.push_back(e->evaluate(ctx));
  ScopeGuard guard(ctx, std::make_shared<Scope>(ctx.scope));
  for (size_t i = 0; i < values.size(); ++i) assignments[i].first.assign(ctx, values[i]);
  shadow(*ctx.scope, shadowed);
  return execute_body(body, ctx, out);
}

Flow LoopControlStmt::render(Context&, std::string&) const { return flow; }

}  // namespace qinfer::jinja
