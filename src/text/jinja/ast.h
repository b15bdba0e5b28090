// The parsed template: expression and statement nodes. Each node evaluates or
// renders itself (eval.cpp); a failure inside a node is reported with that
// node's line and column.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace qinfer::jinja {

struct Context;

using NameVisitor = std::function<void(const std::string& name)>;

struct Expr {
  explicit Expr(size_t offset) : offset(offset) {}
  virtual ~Expr() = default;
  // eval() with EvalErrors turned into errors naming this node's position.
  Value evaluate(Context& ctx) const;
  // Calls on_name for every variable the expression reads (scopes.cpp).
  virtual void visit_names(const NameVisitor& on_name) const = 0;

  size_t offset;  // byte offset in the template source

 protected:
  virtual Value eval(Context& ctx) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

// Arguments as written at a call site: f(a, b, key=c).
struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  CallArgs evaluate(Context& ctx) const;
  void visit_names(const NameVisitor& on_name) const;
};

struct ConstExpr : Expr {
  ConstExpr(size_t offset, Value value) : Expr(offset), value(std::move(value)) {}
  Value value;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

struct NameExpr : Expr {
  NameExpr(size_t offset, std::string name) : Expr(offset), name(std::move(name)) {}
  std::string name;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// [a, b] and (a, b)
struct ListExpr : Expr {
  ListExpr(size_t offset, std::vector<ExprPtr> items, bool is_tuple)
      : Expr(offset), items(std::move(items)), is_tuple(is_tuple) {}
  std::vector<ExprPtr> items;
  bool is_tuple;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

struct DictExpr : Expr {
  using Expr::Expr;
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// obj.name: attribute first, then item (jinja2's getattr).
struct GetAttrExpr : Expr {
  GetAttrExpr(size_t offset, ExprPtr object, std::string name)
      : Expr(offset), object(std::move(object)), name(std::move(name)) {}
  ExprPtr object;
  std::string name;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// obj[key]: item first, then attribute (jinja2's getitem).
struct GetItemExpr : Expr {
  GetItemExpr(size_t offset, ExprPtr object, ExprPtr key)
      : Expr(offset), object(std::move(object)), key(std::move(key)) {}
  ExprPtr object, key;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// obj[start:stop:step], any part may be missing.
struct SliceExpr : Expr {
  SliceExpr(size_t offset, ExprPtr object, ExprPtr start, ExprPtr stop, ExprPtr step)
      : Expr(offset),
        object(std::move(object)),
        start(std::move(start)),
        stop(std::move(stop)),
        step(std::move(step)) {}
  ExprPtr object, start, stop, step;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

struct CallExpr : Expr {
  CallExpr(size_t offset, ExprPtr callee) : Expr(offset), callee(std::move(callee)) {}
  ExprPtr callee;
  ArgExprs args;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

using FilterFn = Value (*)(Context& ctx, const Value& value, CallArgs& args);
using TestFn = bool (*)(Context& ctx, const Value& value, CallArgs& args);

// value | name(args); `value` is null in `{% filter %}` and `{% set x | f %}`
// blocks, where the rendered body is the input.
struct FilterExpr : Expr {
  FilterExpr(size_t offset, ExprPtr value, std::string name, FilterFn fn)
      : Expr(offset), value(std::move(value)), name(std::move(name)), fn(fn) {}
  ExprPtr value;
  std::string name;
  FilterFn fn;  // nullptr: no such filter, an error when it runs (as in jinja2)
  ArgExprs args;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
  Value apply(Context& ctx, const Value& input) const;
};

// value is [not] name(args)
struct TestExpr : Expr {
  TestExpr(size_t offset, ExprPtr value, std::string name, TestFn fn, bool negated)
      : Expr(offset), value(std::move(value)), name(std::move(name)), fn(fn), negated(negated) {}
  ExprPtr value;
  std::string name;
  TestFn fn;  // nullptr: no such test, an error when it runs
  bool negated;
  ArgExprs args;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

enum class UnaryOp { Not, Neg, Pos };
struct UnaryExpr : Expr {
  UnaryExpr(size_t offset, UnaryOp op, ExprPtr operand) : Expr(offset), op(op), operand(std::move(operand)) {}
  UnaryOp op;
  ExprPtr operand;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

enum class BinaryOp { And, Or, Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat };
struct BinaryExpr : Expr {
  BinaryExpr(size_t offset, BinaryOp op, ExprPtr left, ExprPtr right)
      : Expr(offset), op(op), left(std::move(left)), right(std::move(right)) {}
  BinaryOp op;
  ExprPtr left, right;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
// a < b <= c: each link compared in turn, as in Python.
struct CompareExpr : Expr {
  CompareExpr(size_t offset, ExprPtr first) : Expr(offset), first(std::move(first)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// then if cond else otherwise (otherwise may be missing: Undefined)
struct CondExpr : Expr {
  CondExpr(size_t offset, ExprPtr cond, ExprPtr then, ExprPtr otherwise)
      : Expr(offset), cond(std::move(cond)), then(std::move(then)), otherwise(std::move(otherwise)) {}
  ExprPtr cond, then, otherwise;
  Value eval(Context& ctx) const override;
  void visit_names(const NameVisitor& on_name) const override;
};

// ---- statements ----

enum class Flow { Normal, Break, Continue };

struct Stmt {
  explicit Stmt(size_t offset) : offset(offset) {}
  virtual ~Stmt() = default;
  // render() with EvalErrors turned into errors naming this statement's position.
  Flow execute(Context& ctx, std::string& out) const;

  size_t offset;

 protected:
  virtual Flow render(Context& ctx, std::string& out) const = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Runs statements in order until one breaks or continues a loop.
Flow execute_body(const Body& body, Context& ctx, std::string& out);

struct TextStmt : Stmt {
  TextStmt(size_t offset, std::string text) : Stmt(offset), text(std::move(text)) {}
  std::string text;
  Flow render(Context& ctx, std::string& out) const override;
};

struct OutputStmt : Stmt {
  OutputStmt(size_t offset, ExprPtr expr) : Stmt(offset), expr(std::move(expr)) {}
  ExprPtr expr;
  Flow render(Context& ctx, std::string& out) const override;
};

struct IfStmt : Stmt {
  using Stmt::Stmt;
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif, ...
  Body otherwise;
  Flow render(Context& ctx, std::string& out) const override;
};

// What `for`, `set` and `with` assign to: a name, a tuple of targets, or a
// namespace attribute (`ns.attr`, only in `set`).
struct Target {
  size_t offset = 0;
  std::string name;              // a name, or the namespace variable of ns.attr
  std::string attribute;         // non-empty for ns.attr
  std::vector<Target> elements;  // non-empty for a tuple
  bool is_tuple = false;
  void assign(Context& ctx, const Value& value) const;
};

// The names a frame (loop body, macro body, ...) starts with as undefined,
// shadowing any outer value: those it assigns before reading, as jinja2's
// compile-time scoping decides (scopes.cpp).
using ShadowedNames = std::vector<std::string>;

struct ForStmt : Stmt {
  using Stmt::Stmt;
  Target target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`, may be null
  Body body, otherwise;
  ShadowedNames body_shadowed, otherwise_shadowed;
  Flow render(Context& ctx, std::string& out) const override;
};

struct SetStmt : Stmt {
  using Stmt::Stmt;
  Target target;
  ExprPtr value;
  Flow render(Context& ctx, std::string& out) const override;
};

// {% set x | filters %}body{% endset %}
struct SetBlockStmt : Stmt {
  using Stmt::Stmt;
  Target target;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
  ShadowedNames shadowed;
  Flow render(Context& ctx, std::string& out) const override;
};

struct MacroStmt : Stmt {
  using Stmt::Stmt;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  bool takes_varargs = false;                           // the body mentions `varargs` / `kwargs`
  bool takes_kwargs = false;
  Body body;
  ShadowedNames shadowed;
  Flow render(Context& ctx, std::string& out) const override;
};

// {% filter f %}body{% endfilter %}
struct FilterBlockStmt : Stmt {
  using Stmt::Stmt;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
  ShadowedNames shadowed;
  Flow render(Context& ctx, std::string& out) const override;
};

// {% with a = 1 %}body{% endwith %}; also transformers' {% generation %}.
struct ScopeStmt : Stmt {
  using Stmt::Stmt;
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
  ShadowedNames shadowed;
  Flow render(Context& ctx, std::string& out) const override;
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(size_t offset, Flow flow) : Stmt(offset), flow(flow) {}
  Flow flow;  // Break or Continue
  Flow render(Context& ctx, std::string& out) const override;
};

// Fills the ShadowedNames of every frame in the template; returns those of
// the template's top level.
ShadowedNames resolve_scopes(Body& body);

}  // namespace qinfer::jinja
