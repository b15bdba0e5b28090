// Render-time state: variable scopes and the source for error positions.
// Scopes chain like jinja2's frames: each for-loop iteration, macro call,
// `with` block and filter/set block gets a child scope, so `set` inside them
// does not leak out (which is why templates use namespace()).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/lexer.h"
#include "text/jinja/value.h"

namespace qinfer::jinja {

struct Scope {
  explicit Scope(std::shared_ptr<Scope> parent = nullptr) : parent(std::move(parent)) {}
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* lookup(const std::string& name) const;  // this scope, then its parents
  void set(const std::string& name, Value value);      // in this scope
};

struct Context {
  const Source& source;
  std::shared_ptr<Scope> scope;
  int call_depth = 0;  // nested macro calls, bounded to keep recursion off the C++ stack limit
};

// Starts a frame's shadowed names as undefined in its scope (see scopes.cpp).
inline void shadow(Scope& scope, const std::vector<std::string>& names) {
  for (const std::string& name : names) scope.set(name, Undefined{"'" + name + "' is undefined"});
}

// Makes `scope` the current scope of ctx for the lifetime of this object.
class ScopeGuard {
 public:
  ScopeGuard(Context& ctx, std::shared_ptr<Scope> scope) : ctx_(ctx), saved_(std::move(ctx.scope)) {
    ctx_.scope = std::move(scope);
  }
  ~ScopeGuard() { ctx_.scope = std::move(saved_); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  Context& ctx_;
  std::shared_ptr<Scope> saved_;
};

}  // namespace qinfer::jinja
