// jinja2 decides at compile time where each name a frame uses comes from
// (idtracking.py): a name the frame assigns before it has read it starts the
// frame *undefined*, shadowing the outer or context value, so that
//   {% for m in ms %}{{ x }}{% endfor %}{% set x = 1 %}
// prints nothing for x even when the caller passed one. This file replays
// that analysis over the parsed template and records, per frame, the names
// to shadow; everything else the evaluator finds by walking the scope chain,
// which is what jinja2's alias/resolve loads amount to.
#include <set>

#include "text/jinja/ast.h"

namespace qinfer::jinja {

// ---- the names each expression reads ----

void ArgExprs::visit_names(const NameVisitor& on_name) const {
  for (const auto& e : positional) e->visit_names(on_name);
  for (const auto& [key, e] : keywords) e->visit_names(on_name);
}

void ConstExpr::visit_names(const NameVisitor&) const {}
void NameExpr::visit_names(const NameVisitor& on_name) const { on_name(name); }
void ListExpr::visit_names(const NameVisitor& on_name) const {
  for (const auto& e : items) e->visit_names(on_name);
}
void DictExpr::visit_names(const NameVisitor& on_name) const {
  for (const auto& [k, v] : entries) {
    k->visit_names(on_name);
    v->visit_names(on_name);
  }
}
void GetAttrExpr::visit_names(const NameVisitor& on_name) const { object->visit_names(on_name); }
void GetItemExpr::visit_names(const NameVisitor& on_name) const {
  object->visit_names(on_name);
  key->visit_names(on_name);
}
void SliceExpr::visit_names(const NameVisitor& on_name) const {
  for (const ExprPtr* e : {&object, &start, &stop, &step})
    if (*e) (*e)->visit_names(on_name);
}
void CallExpr::visit_names(const NameVisitor& on_name) const {
  callee->visit_names(on_name);
  args.visit_names(on_name);
}
void FilterExpr::visit_names(const NameVisitor& on_name) const {
  if (value) value->visit_names(on_name);
  args.visit_names(on_name);
}
void TestExpr::visit_names(const NameVisitor& on_name) const {
  value->visit_names(on_name);
  args.visit_names(on_name);
}
void UnaryExpr::visit_names(const NameVisitor& on_name) const { operand->visit_names(on_name); }
void BinaryExpr::visit_names(const NameVisitor& on_name) const {
  left->visit_names(on_name);
  right->visit_names(on_name);
}
void CompareExpr::visit_names(const NameVisitor& on_name) const {
  first->visit_names(on_name);
  for (const auto& [op, e] : rest) e->visit_names(on_name);
}
void CondExpr::visit_names(const NameVisitor& on_name) const {
  then->visit_names(on_name);
  cond->visit_names(on_name);
  if (otherwise) otherwise->visit_names(on_name);
}

namespace {

// jinja2's Symbols, reduced to what decides whether a name starts undefined.
struct Symbols {
  const Symbols* parent = nullptr;
  std::set<std::string> refs;    // names this frame has met (read, assigned, parameters)
  std::set<std::string> stores;  // names this frame assigns
  ShadowedNames shadowed;        // assigned before any read, unknown to outer frames

  bool known(const std::string& name) const {
    for (const Symbols* s = this; s; s = s->parent)
      if (s->refs.count(name)) return true;
    return false;
  }
  void load(const std::string& name) {
    if (!known(name)) refs.insert(name);
  }
  void store(const std::string& name) {
    stores.insert(name);
    if (refs.count(name)) return;
    refs.insert(name);
    if (!(parent && parent->known(name))) shadowed.push_back(name);
  }
  void parameter(const std::string& name) {
    stores.insert(name);
    refs.insert(name);
  }
};

// Visits one frame's statements in jinja2's order; frames nested in it are
// queued and analysed once this frame's symbols are complete.
class FrameVisitor {
 public:
  using Visit = std::function<void(FrameVisitor&)>;
  struct ChildFrame {
    Visit visit;
    ShadowedNames* result;
  };

  explicit FrameVisitor(Symbols& symbols) : symbols_(&symbols) {}

  void expr(const Expr* e) {
    if (e) e->visit_names([this](const std::string& name) { symbols_->load(name); });
  }
  void args(const ArgExprs& a) {
    a.visit_names([this](const std::string& name) { symbols_->load(name); });
  }
  void assign(const Target& t, bool as_parameter) {
    if (!t.attribute.empty()) {
      symbols_->load(t.name);  // ns.attr = ... reads ns
    } else if (t.is_tuple) {
      for (const Target& element : t.elements) assign(element, as_parameter);
    } else if (as_parameter) {
      symbols_->parameter(t.name);
    } else {
      symbols_->store(t.name);
    }
  }
  void body(Body& statements) {
    for (auto& s : statements) statement(*s);
  }
  void child(Visit visit, ShadowedNames* result) { children.push_back({std::move(visit), result}); }

  void statement(Stmt& s) {
    if (auto* o = dynamic_cast<OutputStmt*>(&s)) {
      expr(o->expr.get());
    } else if (auto* i = dynamic_cast<IfStmt*>(&s)) {
      if_statement(*i);
    } else if (auto* f = dynamic_cast<ForStmt*>(&s)) {
      expr(f->iterable.get());
      child(
          [f](FrameVisitor& v) {
            v.assign(f->target, true);
            v.body(f->body);
          },
          &f->body_shadowed);
      child([f](FrameVisitor& v) { v.body(f->otherwise); }, &f->otherwise_shadowed);
    } else if (auto* a = dynamic_cast<SetStmt*>(&s)) {
      expr(a->value.get());
      assign(a->target, false);
    } else if (auto* b = dynamic_cast<SetBlockStmt*>(&s)) {
      assign(b->target, false);
      child([b](FrameVisitor& v) { v.body(b->body); }, &b->shadowed);
    } else if (auto* m = dynamic_cast<MacroStmt*>(&s)) {
      symbols_->store(m->name);
      child(
          [m](FrameVisitor& v) {
            for (auto& [param, default_value] : m->params) v.symbols_->parameter(param);
            for (auto& [param, default_value] : m->params) v.expr(default_value.get());
            v.body(m->body);
          },
          &m->shadowed);
    } else if (auto* fb = dynamic_cast<FilterBlockStmt*>(&s)) {
      for (auto& filter : fb->filters) args(filter->args);
      child(
          [fb](FrameVisitor& v) {
            v.body(fb->body);
            for (auto& filter : fb->filters) v.args(filter->args);
          },
          &fb->shadowed);
    } else if (auto* w = dynamic_cast<ScopeStmt*>(&s)) {
      for (auto& [target, value] : w->assignments) expr(value.get());
      child(
          [w](FrameVisitor& v) {
            for (auto& [target, value] : w->assignments) v.assign(target, true);
            v.body(w->body);
          },
          &w->shadowed);
    }
  }

  std::vector<ChildFrame> children;

 private:
  // Each branch is analysed on a copy; afterwards the frame knows every name
  // the branches met. A name first assigned inside a branch is not shadowed:
  // jinja2 resolves it from outside when the branch does not run.
  void if_statement(IfStmt& s) {
    expr(s.branches.front().first.get());
    Symbols* frame = symbols_;
    std::vector<Symbols> branches;
    auto visit_branch = [&](auto&& visit) {
      Symbols copy = *frame;
      symbols_ = &copy;
      visit();
      symbols_ = frame;
      branches.push_back(std::move(copy));
    };
    visit_branch([&] { body(s.branches.front().second); });
    // jinja2 nests elif branches as If nodes in one `elif_` list, visited together.
    visit_branch([&] {
      for (size_t i = 1; i < s.branches.size(); ++i) {
        expr(s.branches[i].first.get());
        body(s.branches[i].second);
      }
    });
    visit_branch([&] { body(s.otherwise); });
    for (Symbols& b : branches) {
      frame->refs.insert(b.refs.begin(), b.refs.end());
      frame->stores.insert(b.stores.begin(), b.stores.end());
    }
  }

  Symbols* symbols_;
};

void analyze_frame(const FrameVisitor::Visit& visit, const Symbols* parent, ShadowedNames& result) {
  Symbols symbols;
  symbols.parent = parent;
  FrameVisitor visitor(symbols);
  visit(visitor);
  result = symbols.shadowed;
  for (FrameVisitor::ChildFrame& c : visitor.children) analyze_frame(c.visit, &symbols, *c.result);
}

}  // namespace

ShadowedNames resolve_scopes(Body& body) {
  ShadowedNames top_level;
  analyze_frame([&](FrameVisitor& v) { v.body(body); }, nullptr, top_level);
  return top_level;
}

}  // namespace qinfer::jinja
