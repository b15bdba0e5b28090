#include "text/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "text/jinja/builtins.h"

namespace qinfer::jinja {

namespace {

using Names = std::initializer_list<const char*>;

bool contains_name(Names names, const std::string& s) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

std::string quote_list(Names names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "'" : ", '") + std::string(n) + "'";
  return out;
}

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens) : src_(source), tokens_(std::move(tokens)) {}

  Body parse_template() {
    Body body = subparse({});
    // After any syntax error, as jinja2 finds these when it compiles the parsed template.
    if (!unknown_.empty()) fail(unknown_.front().first, unknown_.front().second);
    return body;
  }

 private:
  // Deep nesting would exhaust the C++ stack; jinja2 (Python) has a limit too.
  static constexpr int kMaxDepth = 100;

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool skip_operator(const char* op) {
    if (!cur().is_operator(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!cur().is_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const Token& at, const std::string& message) const { src_.fail_at(at.offset, message); }
  [[noreturn]] void fail_expected(const std::string& what) const {
    fail(cur(), "expected " + what + ", got " + describe(cur()));
  }
  void expect_operator(const char* op) {
    if (!skip_operator(op)) fail_expected(std::string("'") + op + "'");
  }
  void expect_name(const char* name) {
    if (!skip_name(name)) fail_expected(std::string("'") + name + "'");
  }
  const Token& expect_identifier() {
    if (cur().type != TokenType::Name) fail_expected("a name");
    return next();
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) fail_expected("end of statement block");
    next();
  }

  // Statements until a block tag named in `end_tags`; returns positioned on
  // that tag's name. An empty `end_tags` parses to the end of the template.
  Body subparse(Names end_tags, const Token* opener = nullptr) {
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::Data:
          body.push_back(std::make_unique<TextStmt>(t.offset, t.text));
          next();
          break;
        case TokenType::VariableBegin: {
          next();
          ExprPtr e = parse_tuple(false, true, {}, false);
          if (cur().type != TokenType::VariableEnd) fail_expected("end of print statement");
          next();
          body.push_back(std::make_unique<OutputStmt>(t.offset, std::move(e)));
          break;
        }
        case TokenType::BlockBegin: {
          next();
          if (cur().type != TokenType::Name) fail_expected("a tag name");
          if (contains_name(end_tags, cur().text)) return body;
          body.push_back(parse_statement(end_tags));
          expect_block_end();
          break;
        }
        case TokenType::Eof:
          if (opener) fail(*opener, "'" + opener->text + "' is never closed: expected " + quote_list(end_tags));
          return body;
        default:
          fail(t, "unexpected " + describe(t));
      }
    }
  }

  // After a tag's arguments: `%}`, the body, and the end tag's name.
  Body parse_statements(Names end_tags, const Token& opener) {
    skip_operator(":");
    expect_block_end();
    return subparse(end_tags, &opener);
  }

  StmtPtr parse_statement(Names enclosing_end_tags) {
    DepthGuard guard(*this);
    const Token& tag = cur();
    const std::string& name = tag.text;
    if (name == "if") return parse_if();
    if (name == "for") return parse_for();
    if (name == "set") return parse_set();
    if (name == "macro") return parse_macro();
    if (name == "filter") return parse_filter_block();
    if (name == "with" || name == "generation") return parse_scope();
    if (name == "print") return parse_print();
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(tag, "'" + name + "' outside of a loop");
      next();
      return std::make_unique<LoopControlStmt>(tag.offset, name == "break" ? Flow::Break : Flow::Continue);
    }
    static const Names kUnsupported = {"block", "extends", "include", "import", "from", "call", "autoescape", "do"};
    if (contains_name(kUnsupported, name)) fail(tag, "the '" + name + "' tag is not supported");
    if (enclosing_end_tags.size())
      fail(tag, "unexpected tag '" + name + "', expected " + quote_list(enclosing_end_tags));
    fail(tag, "unknown tag '" + name + "'");
  }

  StmtPtr parse_if() {
    const Token& opener = next();
    auto stmt = std::make_unique<IfStmt>(opener.offset);
    const SoftFrame soft(*this);
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, opener);
      stmt->branches.emplace_back(std::move(test), std::move(body));
      const Token& end = next();
      if (end.text == "elif") continue;
      if (end.text == "else") {
        stmt->otherwise = parse_statements({"endif"}, opener);
        next();
      }
      return stmt;
    }
  }

  StmtPtr parse_for() {
    const Token& opener = next();
    auto stmt = std::make_unique<ForStmt>(opener.offset);
    stmt->target = parse_assign_target(true, false, {"in"});
    expect_name("in");
    stmt->iterable = parse_tuple(false, false, {"recursive"}, false);
    const InnerFrame inner(*this);  // the loop's filter, body and else too
    if (skip_name("if")) stmt->filter = parse_expression(true);
    if (cur().is_name("recursive")) fail(cur(), "recursive for loops are not supported");
    ++loop_depth_;
    stmt->body = parse_statements({"endfor", "else"}, opener);
    --loop_depth_;
    if (next().text == "else") {
      stmt->otherwise = parse_statements({"endfor"}, opener);
      next();
    }
    return stmt;
  }

  StmtPtr parse_set() {
    const Token& opener = next();
    Target target = parse_assign_target(true, true, {});
    if (skip_operator("=")) {
      auto stmt = std::make_unique<SetStmt>(opener.offset);
      stmt->target = std::move(target);
      stmt->value = parse_tuple(false, true, {}, false);
      return stmt;
    }
    auto stmt = std::make_unique<SetBlockStmt>(opener.offset);
    stmt->target = std::move(target);
    const InnerFrame inner(*this);  // its filters too
    while (skip_operator("|")) stmt->filters.push_back(parse_filter(nullptr));
    stmt->body = parse_statements({"endset"}, opener);
    next();
    return stmt;
  }

  StmtPtr parse_macro() {
    const Token& opener = next();
    auto stmt = std::make_unique<MacroStmt>(opener.offset);
    stmt->name = expect_identifier().text;
    expect_operator("(");
    while (!cur().is_operator(")")) {
      if (!stmt->params.empty()) expect_operator(",");
      const Token& param = expect_identifier();
      ExprPtr default_value;
      if (skip_operator("=")) {
        default_value = parse_expression(true);
      } else if (!stmt->params.empty() && stmt->params.back().second) {
        fail(param, "non-default argument follows default argument");
      }
      stmt->params.emplace_back(param.text, std::move(default_value));
    }
    expect_operator(")");
    open_macros_.push_back(stmt.get());
    int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    const InnerFrame inner(*this);
    stmt->body = parse_statements({"endmacro"}, opener);
    loop_depth_ = saved_loop_depth;
    open_macros_.pop_back();
    next();
    return stmt;
  }

  StmtPtr parse_filter_block() {
    const Token& opener = next();
    auto stmt = std::make_unique<FilterBlockStmt>(opener.offset);
    const InnerFrame inner(*this);  // its filters too
    do {
      stmt->filters.push_back(parse_filter(nullptr));
    } while (skip_operator("|"));
    stmt->body = parse_statements({"endfilter"}, opener);
    next();
    return stmt;
  }

  // {% with a = x, b = y %} ... {% endwith %} and {% generation %} ... {% endgeneration %}
  StmtPtr parse_scope() {
    const Token& opener = next();
    auto stmt = std::make_unique<ScopeStmt>(opener.offset);
    if (opener.text == "with") {
      while (cur().type != TokenType::BlockEnd) {
        if (!stmt->assignments.empty()) expect_operator(",");
        Target target = parse_assign_target(true, false, {});
        expect_operator("=");
        stmt->assignments.emplace_back(std::move(target), parse_expression(true));
      }
      const InnerFrame inner(*this);
      stmt->body = parse_statements({"endwith"}, opener);
    } else {
      stmt->body = parse_statements({"endgeneration"}, opener);
    }
    next();
    return stmt;
  }

  // {% print a, b %} prints a then b.
  StmtPtr parse_print() {
    const Token& opener = next();
    ExprPtr printed = parse_expression(true);
    while (skip_operator(",")) {
      size_t offset = cur().offset;
      printed = std::make_unique<BinaryExpr>(offset, BinaryOp::Concat, std::move(printed), parse_expression(true));
    }
    return std::make_unique<OutputStmt>(opener.offset, std::move(printed));
  }

  // ---- assignment targets ----

  Target parse_assign_target(bool with_tuple, bool with_namespace, Names extra_end) {
    Target first = parse_target_primary(with_namespace);
    if (!with_tuple || !cur().is_operator(",")) return first;
    Target tuple;
    tuple.offset = first.offset;
    tuple.is_tuple = true;
    tuple.elements.push_back(std::move(first));
    while (skip_operator(",")) {
      if (is_tuple_end(extra_end)) break;
      tuple.elements.push_back(parse_target_primary(with_namespace));
    }
    return tuple;
  }

  Target parse_target_primary(bool with_namespace) {
    const Token& t = cur();
    Target target;
    target.offset = t.offset;
    if (t.type == TokenType::Name) {
      static const Names kConstants = {"true", "false", "none", "True", "False", "None"};
      if (contains_name(kConstants, t.text)) fail(t, "can't assign to '" + t.text + "'");
      next();
      target.name = t.text;
      if (with_namespace && cur().is_operator(".")) {
        next();
        target.attribute = expect_identifier().text;
      }
      return target;
    }
    if (t.type == TokenType::Operator && t.text == "(") {
      next();
      target = parse_assign_target(true, with_namespace, {});
      expect_operator(")");
      return target;
    }
    fail(t, "can't assign to " + describe(t));
  }

  // ---- expressions (jinja2's precedence, lowest first) ----

  bool is_tuple_end(Names extra_end) const {
    const Token& t = cur();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.is_operator(")")) return true;
    return t.type == TokenType::Name && contains_name(extra_end, t.text);
  }

  // Comma-separated expressions make a tuple: `{{ a, b }}`, `for x in a, b`.
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, Names extra_end, bool explicit_parentheses) {
    size_t offset = cur().offset;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_operator(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (!cur().is_operator(",")) break;
      is_tuple = true;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items.front());
      if (!explicit_parentheses) fail_expected("an expression");
    }
    return std::make_unique<ListExpr>(offset, std::move(items), true);
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const size_t unknown_before = unknown_.size();
    ExprPtr expr = parse_or();
    while (cur().is_name("if")) {
      unknown_.resize(unknown_before);  // the value of a conditional expression is soft too
      const SoftFrame soft(*this);
      size_t offset = next().offset;
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      expr = std::make_unique<CondExpr>(offset, std::move(cond), std::move(expr), std::move(otherwise));
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (cur().is_name("or")) {
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, BinaryOp::Or, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (cur().is_name("and")) {
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, BinaryOp::And, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (cur().is_name("not")) {
      DepthGuard guard(*this);
      size_t offset = next().offset;
      return std::make_unique<UnaryExpr>(offset, UnaryOp::Not, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    size_t offset = cur().offset;
    ExprPtr first = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    while (true) {
      CompareOp op;
      const Token& t = cur();
      if (t.is_operator("=="))
        op = CompareOp::Eq;
      else if (t.is_operator("!="))
        op = CompareOp::Ne;
      else if (t.is_operator("<"))
        op = CompareOp::Lt;
      else if (t.is_operator("<="))
        op = CompareOp::Le;
      else if (t.is_operator(">"))
        op = CompareOp::Gt;
      else if (t.is_operator(">="))
        op = CompareOp::Ge;
      else if (t.is_name("in"))
        op = CompareOp::In;
      else if (t.is_name("not") && peek().is_name("in")) {
        next();
        op = CompareOp::NotIn;
      } else {
        break;
      }
      next();
      if (!cmp) cmp = std::make_unique<CompareExpr>(offset, std::move(first));
      cmp->rest.emplace_back(op, parse_math1());
    }
    if (cmp) return cmp;
    return first;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (cur().is_operator("+") || cur().is_operator("-")) {
      const Token& t = next();
      BinaryOp op = t.text == "+" ? BinaryOp::Add : BinaryOp::Sub;
      left = std::make_unique<BinaryExpr>(t.offset, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (cur().is_operator("~")) {
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, BinaryOp::Concat, std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (true) {
      const Token& t = cur();
      BinaryOp op;
      if (t.is_operator("*"))
        op = BinaryOp::Mul;
      else if (t.is_operator("/"))
        op = BinaryOp::Div;
      else if (t.is_operator("//"))
        op = BinaryOp::FloorDiv;
      else if (t.is_operator("%"))
        op = BinaryOp::Mod;
      else
        break;
      next();
      left = std::make_unique<BinaryExpr>(t.offset, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (cur().is_operator("**")) {
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, BinaryOp::Pow, std::move(left), parse_unary(true));
    }
    return left;
  }

  // -x and +x bind tighter than filters: `-x|abs` is `(-x)|abs`.
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const Token& t = cur();
    ExprPtr node;
    if (t.is_operator("-") || t.is_operator("+")) {
      next();
      UnaryOp op = t.text == "-" ? UnaryOp::Neg : UnaryOp::Pos;
      node = std::make_unique<UnaryExpr>(t.offset, op, parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::Name: {
        next();
        if (t.text == "true" || t.text == "True") return std::make_unique<ConstExpr>(t.offset, Value(true));
        if (t.text == "false" || t.text == "False") return std::make_unique<ConstExpr>(t.offset, Value(false));
        if (t.text == "none" || t.text == "None") return std::make_unique<ConstExpr>(t.offset, Value(None{}));
        note_name(t.text);
        return std::make_unique<NameExpr>(t.offset, t.text);
      }
      case TokenType::String: {
        std::string s;
        while (cur().type == TokenType::String) s += next().text;  // "a" "b" is "ab"
        return std::make_unique<ConstExpr>(t.offset, Value(std::move(s)));
      }
      case TokenType::Integer:
        next();
        return std::make_unique<ConstExpr>(t.offset, Value(t.int_value));
      case TokenType::Float:
        next();
        return std::make_unique<ConstExpr>(t.offset, Value(t.float_value));
      case TokenType::Operator:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(false, true, {}, true);
          expect_operator(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail(t, "unexpected " + describe(t));
  }

  ExprPtr parse_list() {
    size_t offset = next().offset;
    std::vector<ExprPtr> items;
    while (!cur().is_operator("]")) {
      if (!items.empty()) expect_operator(",");
      if (cur().is_operator("]")) break;
      items.push_back(parse_expression(true));
    }
    expect_operator("]");
    return std::make_unique<ListExpr>(offset, std::move(items), false);
  }

  ExprPtr parse_dict() {
    auto dict = std::make_unique<DictExpr>(next().offset);
    while (!cur().is_operator("}")) {
      if (!dict->entries.empty()) expect_operator(",");
      if (cur().is_operator("}")) break;
      ExprPtr key = parse_expression(true);
      expect_operator(":");
      dict->entries.emplace_back(std::move(key), parse_expression(true));
    }
    expect_operator("}");
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (cur().is_operator(".") || cur().is_operator("[")) {
        node = parse_subscript(std::move(node));
      } else if (cur().is_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (cur().is_operator("|")) {
        next();
        node = parse_filter(std::move(node));
      } else if (cur().is_name("is")) {
        node = parse_test(std::move(node));
      } else if (cur().is_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = next();
    if (t.text == ".") {
      const Token& attr = cur();
      if (attr.type == TokenType::Name) {
        next();
        return std::make_unique<GetAttrExpr>(t.offset, std::move(node), attr.text);
      }
      if (attr.type == TokenType::Integer) {  // x.0 is x[0]
        next();
        return std::make_unique<GetItemExpr>(t.offset, std::move(node),
                                             std::make_unique<ConstExpr>(attr.offset, Value(attr.int_value)));
      }
      fail_expected("a name or number after '.'");
    }
    // '[': one subscript (an expression or a slice) or a tuple of expressions.
    std::vector<Subscript> subscripts;
    while (!cur().is_operator("]")) {
      if (!subscripts.empty()) expect_operator(",");
      subscripts.push_back(parse_subscribed());
    }
    expect_operator("]");
    if (subscripts.empty()) fail(t, "expected a subscript expression");
    if (subscripts.size() == 1 && subscripts[0].is_slice) {
      Subscript& s = subscripts[0];
      return std::make_unique<SliceExpr>(t.offset, std::move(node), std::move(s.start), std::move(s.stop),
                                         std::move(s.step));
    }
    std::vector<ExprPtr> keys;
    for (Subscript& s : subscripts) {
      if (s.is_slice) fail(t, "tuples of slices are not supported");
      keys.push_back(std::move(s.start));
    }
    ExprPtr key = keys.size() == 1 ? std::move(keys.front())
                                   : std::make_unique<ListExpr>(keys.front()->offset, std::move(keys), true);
    return std::make_unique<GetItemExpr>(t.offset, std::move(node), std::move(key));
  }

  // An expression (in `start`) or a slice start:stop:step with optional parts.
  struct Subscript {
    bool is_slice = false;
    ExprPtr start, stop, step;
  };

  Subscript parse_subscribed() {
    Subscript s;
    if (!cur().is_operator(":")) {
      s.start = parse_expression(true);
      if (!cur().is_operator(":")) return s;
    }
    next();  // ':'
    s.is_slice = true;
    auto at_part_end = [&] { return cur().is_operator("]") || cur().is_operator(","); };
    if (!cur().is_operator(":") && !at_part_end()) s.stop = parse_expression(true);
    if (skip_operator(":") && !at_part_end()) s.step = parse_expression(true);
    return s;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = std::make_unique<CallExpr>(cur().offset, std::move(callee));
    parse_call_args(call->args);
    return call;
  }

  void parse_call_args(ArgExprs& args) {
    expect_operator("(");
    while (!cur().is_operator(")")) {
      if (!args.positional.empty() || !args.keywords.empty()) {
        expect_operator(",");
        if (cur().is_operator(")")) break;
      }
      if (cur().is_operator("*") || cur().is_operator("**"))
        fail(cur(), "*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::Name && peek().is_operator("=")) {
        std::string key = next().text;
        next();
        args.keywords.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!args.keywords.empty()) fail(cur(), "positional argument follows keyword argument");
        args.positional.push_back(parse_expression(true));
      }
    }
    expect_operator(")");
  }

  std::unique_ptr<FilterExpr> parse_filter(ExprPtr value) {
    const Token& name = expect_identifier();
    FilterFn fn = find_filter(name.text);
    if (!fn) unknown(name, "no filter named '" + name.text + "'");
    auto filter = std::make_unique<FilterExpr>(name.offset, std::move(value), name.text, fn);
    if (cur().is_operator("(")) parse_call_args(filter->args);
    return filter;
  }

  ExprPtr parse_test(ExprPtr value) {
    next();  // 'is'
    bool negated = skip_name("not");
    const Token& name = expect_identifier();
    TestFn fn = find_test(name.text);
    if (!fn) unknown(name, "no test named '" + name.text + "'");
    auto test = std::make_unique<TestExpr>(name.offset, std::move(value), name.text, fn, negated);
    const Token& t = cur();
    if (t.is_operator("(")) {
      parse_call_args(test->args);
    } else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Integer ||
                t.type == TokenType::Float || t.is_operator("[") || t.is_operator("{")) &&
               !t.is_name("else") && !t.is_name("or") && !t.is_name("and")) {
      // `x is divisibleby 3`: one argument without parentheses.
      if (t.is_name("is")) fail(t, "tests cannot be chained with 'is'");
      test->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return test;
  }

  // Macros accept extra arguments only when their body mentions varargs/kwargs.
  void note_name(const std::string& name) {
    for (MacroStmt* m : open_macros_) {
      if (name == "varargs") m->takes_varargs = true;
      if (name == "kwargs") m->takes_kwargs = true;
    }
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxDepth) p.fail(p.cur(), "expression nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  // jinja2 refuses a template that names an unknown filter or test, unless
  // the name is in a "soft frame": an if statement's test or body, or a
  // conditional expression, not inside a loop, macro or block within it.
  // There it is an error only when it runs: templates name filters of other
  // engines in branches they do not take (DeepSeek-V3.2's from_json).
  struct SoftFrame {
    explicit SoftFrame(Parser& p) : p(p), saved(p.soft_) { p.soft_ = true; }
    ~SoftFrame() { p.soft_ = saved; }
    Parser& p;
    bool saved;
  };
  struct InnerFrame {
    explicit InnerFrame(Parser& p) : p(p), saved(p.soft_) { p.soft_ = false; }
    ~InnerFrame() { p.soft_ = saved; }
    Parser& p;
    bool saved;
  };
  void unknown(const Token& name, std::string message) {
    if (!soft_) unknown_.emplace_back(name, std::move(message));
  }

  const Source& src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  bool soft_ = false;
  std::vector<std::pair<Token, std::string>> unknown_;  // names outside soft frames, refused once parsed
  std::vector<MacroStmt*> open_macros_;
};

}  // namespace

Body parse(const Source& source) { return Parser(source, tokenize(source)).parse_template(); }

}  // namespace qinfer::jinja
