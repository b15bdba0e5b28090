#include "text/grammar/grammar.h"

#include <algorithm>
#include <functional>

#include "util/error.h"

namespace qinfer::grammar {

ByteSet byte_class(std::string_view spec) {
  ByteSet set;
  for (size_t i = 0; i < spec.size(); ++i) {
    const auto lo = static_cast<unsigned char>(spec[i]);
    if (i + 2 < spec.size() && spec[i + 1] == '-') {
      const auto hi = static_cast<unsigned char>(spec[i + 2]);
      for (unsigned b = lo; b <= hi; ++b) set.set(b);
      i += 2;
    } else {
      set.set(lo);
    }
  }
  return set;
}

Expr bytes(const ByteSet& set) {
  Expr e;
  e.kind = Expr::Kind::Bytes;
  e.bytes = set;
  return e;
}

Expr literal(std::string_view text) {
  Expr e;
  for (char c : text) e.parts.push_back(bytes(ByteSet().set(static_cast<unsigned char>(c))));
  return e;
}

Expr sequence(std::vector<Expr> parts) {
  Expr e;
  e.parts = std::move(parts);
  return e;
}

namespace {

// The text `e` matches when it is a literal (single bytes in sequence, as
// "..." gives them), else nullopt.
std::optional<std::string> literal_text(const Expr& e) {
  if (e.kind == Expr::Kind::Bytes) {
    if (e.bytes.count() != 1) return std::nullopt;
    for (size_t b = 0; b < 256; ++b)
      if (e.bytes.test(b)) return std::string(1, static_cast<char>(b));
  }
  if (e.kind != Expr::Kind::Sequence) return std::nullopt;
  std::string text;
  for (const Expr& part : e.parts) {
    std::optional<std::string> t = literal_text(part);
    if (!t) return std::nullopt;
    text += *t;
  }
  return text;
}

}  // namespace

Expr choice(std::vector<Expr> parts) {
  Expr e;
  e.kind = Expr::Kind::Choice;
  e.parts = std::move(parts);
  return e;
}

Expr repeat(Expr part, uint32_t min, uint32_t max) {
  if (max < min) fail("grammar: repetition of at least ", min, " and at most ", max, " times");
  Expr e;
  e.kind = Expr::Kind::Repeat;
  e.parts.push_back(std::move(part));
  e.min = min;
  e.max = max;
  return e;
}

Expr GrammarBuilder::ref(int32_t rule) {
  Expr e;
  e.kind = Expr::Kind::Rule;
  e.rule = rule;
  return e;
}

int32_t GrammarBuilder::rule(std::string_view name) {
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return it->second;
  const auto id = static_cast<int32_t>(new_rule(std::string(name)));
  by_name_.emplace(name, id);
  return id;
}

uint32_t GrammarBuilder::new_rule(std::string name) {
  names_.push_back(std::move(name));
  defined_.push_back(false);
  alts_.emplace_back();
  return static_cast<uint32_t>(names_.size() - 1);
}

Expr GrammarBuilder::alternation(std::vector<Expr> alts) {
  if (alts.size() == 1) return std::move(alts[0]);
  std::vector<std::string> texts;
  for (const Expr& alt : alts) {
    std::optional<std::string> t = literal_text(alt);
    if (!t) return choice(std::move(alts));
    texts.push_back(std::move(*t));
  }
  return literal_choice(std::move(texts), "literals");
}

Expr GrammarBuilder::literal_choice(std::vector<std::string> texts, const std::string& hint) {
  if (texts.empty()) fail("grammar: a choice among no texts");
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  // Rule for texts[lo, hi) from byte `depth` on: iteratively, a worklist of
  // (rule, lo, hi, depth).
  struct Work {
    int32_t rule;
    size_t lo, hi, depth;
  };
  const int32_t top = new_anonymous_rule(hint);
  std::vector<Work> work{{top, 0, texts.size(), 0}};
  while (!work.empty()) {
    const Work w = work.back();
    work.pop_back();
    std::vector<Expr> alts;
    size_t i = w.lo;
    if (texts[i].size() == w.depth) {  // one text ends here (sorted: the first)
      alts.push_back(sequence({}));
      ++i;
    }
    while (i < w.hi) {
      // Texts sharing the byte at `depth` and the run after it that all share.
      size_t j = i + 1;
      while (j < w.hi && texts[j][w.depth] == texts[i][w.depth]) ++j;
      size_t run = w.depth + 1;
      while (run < texts[i].size() && texts[j - 1].size() > run && texts[i][run] == texts[j - 1][run]) ++run;
      // texts[i..j) are sorted: those sharing the first and last's prefix share it all.
      Expr prefix = literal(std::string_view(texts[i]).substr(w.depth, run - w.depth));
      if (j - i == 1 && texts[i].size() == run) {
        alts.push_back(std::move(prefix));
      } else {
        const int32_t next = new_anonymous_rule(hint);
        work.push_back({next, i, j, run});
        alts.push_back(sequence({std::move(prefix), ref(next)}));
      }
      i = j;
    }
    define(w.rule, alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts)));
  }
  return ref(top);
}

void GrammarBuilder::check_size() const {
  if (items_ > max_items_) fail("grammar: more than ", max_items_, " items (repetition counts too large?)");
}

void GrammarBuilder::add_alternative(uint32_t rule, std::vector<Item> seq) {
  items_ += seq.size() + 1;
  check_size();
  alts_[rule].push_back(std::move(seq));
}

void GrammarBuilder::define(int32_t rule, Expr expr) {
  if (rule < 0 || static_cast<size_t>(rule) >= names_.size()) fail("grammar: no rule ", rule);
  if (defined_[rule]) fail("grammar: rule ", names_[rule], " is defined twice");
  defined_[rule] = true;
  const std::string owner = names_[rule];
  if (expr.kind == Expr::Kind::Choice) {
    for (const Expr& alt : expr.parts) {
      std::vector<Item> seq;
      lower(alt, owner, seq);
      add_alternative(rule, std::move(seq));
    }
  } else {
    std::vector<Item> seq;
    lower(expr, owner, seq);
    add_alternative(rule, std::move(seq));
  }
}

// Appends e's items to `seq`; choices and repetitions become rules of their
// own, named after the rule they appear in. Returns the items appended.
uint32_t GrammarBuilder::lower(const Expr& e, const std::string& owner, std::vector<Item>& seq) {
  const size_t before = seq.size();
  auto helper_rule = [&](const Expr& body) {
    const uint32_t r = new_rule(owner + "-" + std::to_string(names_.size()));
    define(static_cast<int32_t>(r), body);
    return r;
  };
  switch (e.kind) {
    case Expr::Kind::Bytes: {
      const auto [it, added] = set_index_.emplace(e.bytes, static_cast<uint32_t>(sets_.size()));
      if (added) sets_.push_back(e.bytes);
      seq.push_back({Item::Kind::Bytes, it->second});
      break;
    }
    case Expr::Kind::Sequence:
      for (const Expr& part : e.parts) lower(part, owner, seq);
      break;
    case Expr::Kind::Choice:
      seq.push_back({Item::Kind::Rule, helper_rule(e)});
      break;
    case Expr::Kind::Rule:
      if (e.rule < 0 || static_cast<size_t>(e.rule) >= names_.size()) fail("grammar: reference to no rule ", e.rule);
      seq.push_back({Item::Kind::Rule, static_cast<uint32_t>(e.rule)});
      break;
    case Expr::Kind::Repeat: {
      const Expr& part = e.parts.at(0);
      // One item (a byte set or a rule) is repeated as is; anything larger
      // becomes a rule first, so that copies do not copy its items.
      std::vector<Item> unit;
      lower(part, owner, unit);
      if (unit.size() != 1) {
        const uint32_t r = new_rule(owner + "-" + std::to_string(names_.size()));
        defined_[r] = true;
        add_alternative(r, std::move(unit));
        unit = {{Item::Kind::Rule, r}};
      }
      if (e.max > 1 && unit[0].kind == Item::Kind::Rule) repeated_rules_.push_back({unit[0].arg, owner});
      for (uint32_t i = 0; i < e.min; ++i) {
        seq.push_back(unit[0]);
        if (++items_ > max_items_) check_size();
      }
      if (e.max == Expr::kUnbounded) {  // tail ::= unit tail | ""
        const uint32_t tail = new_rule(owner + "-" + std::to_string(names_.size()));
        defined_[tail] = true;
        add_alternative(tail, {unit[0], {Item::Kind::Rule, tail}});
        add_alternative(tail, {});
        seq.push_back({Item::Kind::Rule, tail});
      } else if (e.max > e.min) {  // up_to_k ::= unit up_to_(k-1) | "", up_to_1 ::= unit | ""
        uint32_t previous = 0;
        for (uint32_t k = 1; k <= e.max - e.min; ++k) {
          const uint32_t r = new_rule(owner + "-" + std::to_string(names_.size()));
          defined_[r] = true;
          if (k == 1)
            add_alternative(r, {unit[0]});
          else
            add_alternative(r, {unit[0], {Item::Kind::Rule, previous}});
          add_alternative(r, {});
          previous = r;
        }
        seq.push_back({Item::Kind::Rule, previous});
      }
      break;
    }
  }
  return static_cast<uint32_t>(seq.size() - before);
}

Grammar GrammarBuilder::build(int32_t root, size_t max_items) && {
  max_items_ = max_items;
  check_size();
  if (root < 0 || static_cast<size_t>(root) >= names_.size()) fail("grammar: no root rule ", root);
  for (size_t r = 0; r < names_.size(); ++r)
    if (!defined_[r]) fail("grammar: rule ", names_[r], " is used but never defined");

  // Nullable rules (those that can match nothing), by a worklist: each
  // alternative counts its items not yet known nullable, and a rule found
  // nullable lowers the counts of the alternatives that use it (linear in
  // the grammar's size; a pass per change was quadratic on a chain of rules).
  const size_t n = names_.size();
  std::vector<bool> nullable(n, false);
  std::vector<std::pair<uint32_t, size_t>> alternatives;  // (rule, alternative)
  std::vector<size_t> unknown;                            // per alternative: items not yet nullable
  std::vector<std::vector<size_t>> used_by(n);            // rule -> alternatives holding it (once per item)
  std::vector<uint32_t> found;
  for (size_t r = 0; r < n; ++r)
    for (size_t a = 0; a < alts_[r].size(); ++a) {
      const size_t id = alternatives.size();
      alternatives.push_back({static_cast<uint32_t>(r), a});
      size_t count = 0;
      for (const Item& it : alts_[r][a]) {
        if (it.kind == Item::Kind::Bytes) count = SIZE_MAX / 2;  // never nullable
        if (it.kind != Item::Kind::Rule) continue;
        ++count;
        used_by[it.arg].push_back(id);
      }
      unknown.push_back(count);
      if (count == 0 && !nullable[r]) {
        nullable[r] = true;
        found.push_back(static_cast<uint32_t>(r));
      }
    }
  while (!found.empty()) {
    const uint32_t r = found.back();
    found.pop_back();
    for (const size_t id : used_by[r]) {
      const uint32_t owner = alternatives[id].first;
      if (--unknown[id] == 0 && !nullable[owner]) {
        nullable[owner] = true;
        found.push_back(owner);
      }
    }
  }
  for (const auto& [rule, owner] : repeated_rules_)
    if (nullable[rule]) throw RuleError("grammar: rule " + owner + " repeats something that may match nothing", owner);
  // Left recursion: a cycle among "r may start by expanding s" edges.
  std::vector<std::vector<uint32_t>> left(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : alts_[r])
      for (const Item& it : alt) {
        if (it.kind != Item::Kind::Rule) break;
        left[r].push_back(it.arg);
        if (!nullable[it.arg]) break;
      }
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> mark(n, kNew);
  for (size_t start = 0; start < n; ++start) {
    if (mark[start] != kNew) continue;
    // Iterative depth-first search: (rule, next edge).
    std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(start), 0}};
    mark[start] = kOpen;
    while (!path.empty()) {
      auto& [r, edge] = path.back();
      if (edge == left[r].size()) {
        mark[r] = kDone;
        path.pop_back();
        continue;
      }
      const uint32_t s = left[r][edge++];
      if (mark[s] == kOpen) {
        // The cycle is s .. r on the path; a rule made for a group is named after its owner: name a named one.
        auto cycle = std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == s; });
        auto named = std::find_if(cycle, path.end(), [&](const auto& p) { return by_name_.count(names_[p.first]); });
        const std::string& name = names_[named == path.end() ? s : named->first];
        throw RuleError("grammar: rule " + name + " is left-recursive", name);
      }
      if (mark[s] == kNew) {
        mark[s] = kOpen;
        path.push_back({s, 0});
      }
    }
  }

  Grammar g;
  g.sets = std::move(sets_);
  g.rule_names = std::move(names_);
  g.rule_alts.resize(n);
  g.items.reserve(items_);
  for (size_t r = 0; r < n; ++r)
    for (auto& alt : alts_[r]) {
      g.rule_alts[r].push_back(static_cast<uint32_t>(g.items.size()));
      g.items.insert(g.items.end(), alt.begin(), alt.end());
      g.items.push_back({Item::Kind::End, 0});
    }
  g.root = static_cast<uint32_t>(root);
  return g;
}

}  // namespace qinfer::grammar
