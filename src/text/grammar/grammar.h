// A context-free grammar over bytes, the form constrained decoding walks
// (response_format json_object / json_schema): rules whose alternatives are
// sequences of byte sets and references to rules, as llama.cpp's GBNF. Built
// from expression trees (Expr: literals, byte sets, sequences, alternatives,
// repetitions); build() flattens them and refuses grammars a matcher could not
// walk: undefined rules and left recursion (a rule reachable from itself
// without consuming a byte would expand forever).
#pragma once
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/error.h"

namespace qinfer::grammar {

using ByteSet = std::bitset<256>;

// ByteSet from a class such as "a-zA-Z_" ('-' between two bytes is a range).
ByteSet byte_class(std::string_view spec);

struct Expr {
  enum class Kind : uint8_t { Bytes, Sequence, Choice, Rule, Repeat };
  static constexpr uint32_t kUnbounded = UINT32_MAX;
  Kind kind = Kind::Sequence;
  ByteSet bytes;              // Bytes
  std::vector<Expr> parts;    // Sequence, Choice; Repeat: one part
  int32_t rule = -1;          // Rule
  uint32_t min = 0, max = 0;  // Repeat
};

Expr bytes(const ByteSet& set);
Expr literal(std::string_view text);  // a sequence of single bytes; "" matches nothing (empty)
Expr sequence(std::vector<Expr> parts);
Expr choice(std::vector<Expr> parts);
Expr repeat(Expr part, uint32_t min, uint32_t max = Expr::kUnbounded);
inline Expr optional(Expr part) { return repeat(std::move(part), 0, 1); }
inline Expr star(Expr part) { return repeat(std::move(part), 0); }

// One position in the flattened grammar: match a byte set, expand a rule, or
// the end of an alternative (return to the caller).
struct Item {
  enum class Kind : uint8_t { Bytes, Rule, End };
  Kind kind;
  uint32_t arg;  // Bytes: index into Grammar::sets; Rule: rule id
};

struct Grammar {
  std::vector<Item> items;                       // alternatives back to back, each ending with End
  std::vector<std::vector<uint32_t>> rule_alts;  // rule id -> item index of each alternative's first item
  std::vector<ByteSet> sets;
  std::vector<std::string> rule_names;
  uint32_t root = 0;
};

// build()'s refusal of what one rule does (left recursion, a repeat of what
// may match nothing): `rule` names it (a named rule, not one of the rules
// build() makes for groups), so a front end can say where it is written.
class RuleError : public Error {
 public:
  RuleError(const std::string& what, std::string rule) : Error(what), rule(std::move(rule)) {}
  std::string rule;
};

// The most items a grammar may have (build()'s default): each byte of a
// literal is one, so text longer than this cannot make a grammar either.
constexpr size_t kMaxGrammarItems = 1 << 20;

class GrammarBuilder {
 public:
  // The rule called `name`, declared on first use.
  int32_t rule(std::string_view name);
  bool has_rule(std::string_view name) const { return by_name_.count(std::string(name)) > 0; }
  // A new rule no name refers to (named `hint` in messages).
  int32_t new_anonymous_rule(const std::string& hint) { return static_cast<int32_t>(new_rule(hint)); }
  Expr ref(std::string_view name) { return ref(rule(name)); }
  static Expr ref(int32_t rule);
  // Exactly one of `texts`, factored by common prefixes into a trie of rules
  // (named `hint`), so that a long list leaves one way to go per byte, not
  // one per text.
  Expr literal_choice(std::vector<std::string> texts, const std::string& hint);
  // One of `alts`: a choice, or where all are literals ("yes" | "no" | ...)
  // their literal_choice.
  Expr alternation(std::vector<Expr> alts);
  // Gives `rule` its expression; each rule is defined once.
  void define(int32_t rule, Expr expr);
  // Throws qinfer::Error naming an undefined or left-recursive rule, or a
  // grammar over `max_items` items (repetition counts multiply its size).
  Grammar build(int32_t root, size_t max_items = kMaxGrammarItems) &&;

 private:
  uint32_t lower(const Expr& e, const std::string& owner, std::vector<Item>& seq);
  uint32_t new_rule(std::string name);
  void add_alternative(uint32_t rule, std::vector<Item> seq);
  void check_size() const;

  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::vector<bool> defined_;
  std::vector<std::vector<std::vector<Item>>> alts_;  // rule -> alternatives
  std::vector<ByteSet> sets_;
  std::unordered_map<ByteSet, uint32_t> set_index_;  // sets_ -> its index
  // Rules repeated more than once (their owner's name): one that may match
  // nothing is refused (as many ways to reach a count as there are counts).
  std::vector<std::pair<uint32_t, std::string>> repeated_rules_;
  size_t items_ = 0, max_items_ = kMaxGrammarItems;
};

}  // namespace qinfer::grammar
