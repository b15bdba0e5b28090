#include "text/grammar/gbnf.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/grammar/code_points.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space();
    if (at_end()) fail("grammar: it has no rules (the output is a match of the rule named root)");
    while (!at_end()) {
      const size_t at = pos_;
      if (peek() == ')') refuse("a ')' without its '('");
      const std::string name = rule_name();
      if (name.empty()) refuse("a rule name was expected");
      skip_space();
      if (!eat("::=")) refuse("'::=' was expected after the rule name '" + name + "'");
      skip_space();
      if (!defined_.emplace(name, at).second) refuse_at(at, "the rule '" + name + "' is defined twice");
      const int32_t rule = builder_.rule(name);
      builder_.define(rule, alternatives());
    }
    const std::pair<const std::string, size_t>* undefined = nullptr;  // the first in the text
    for (const auto& use : used_)
      if (!defined_.count(use.first) && (!undefined || use.second < undefined->second)) undefined = &use;
    if (undefined) refuse_at(undefined->second, "the rule '" + undefined->first + "' is used but never defined");
    if (!defined_.count("root")) fail("grammar: it has no rule named root (the output is a match of root)");
    const int32_t root = builder_.rule("root");
    try {
      return std::move(builder_).build(root);
    } catch (const RuleError& e) {  // where the rule is written
      const auto at = defined_.find(e.rule);
      if (at == defined_.end()) throw;
      constexpr std::string_view kPrefix = "grammar: ";
      const std::string what = e.what();
      refuse_at(at->second, what.rfind(kPrefix, 0) == 0 ? what.substr(kPrefix.size()) : what);
    }
  }

 private:
  [[noreturn]] void refuse(const std::string& what) { refuse_at(pos_, what); }
  [[noreturn]] void refuse_at(size_t at, const std::string& what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 0;
      ++column;
    }
    fail("grammar: ", what, " (line ", line, ", column ", column, ")");
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool eat(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }

  // Blanks, line breaks and '#' comments.
  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string rule_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // Whether the next rule's `name ::=` starts here (which ends this one).
  bool at_next_rule() {
    const size_t start = pos_;
    const bool named = !rule_name().empty();
    skip_space();
    const bool next = named && text_.substr(pos_, 3) == "::=";
    pos_ = start;
    return next;
  }

  Expr alternatives() {
    if (++depth_ > kMaxDepth) refuse("groups nested deeper than " + std::to_string(kMaxDepth) + " levels");
    std::vector<Expr> alts;
    do {
      skip_space();
      std::vector<Expr> terms;
      while (!at_end() && peek() != '|' && peek() != ')' && !at_next_rule()) {
        terms.push_back(term());
        skip_space();
      }
      alts.push_back(sequence(std::move(terms)));
    } while (eat("|"));
    --depth_;
    // Alternatives that are all literals as a trie: a long list then leaves one way to go per next byte, not one
    // per string.
    return builder_.alternation(std::move(alts));
  }

  // An atom and its quantifier, if any: one (each would nest the expression
  // once more, and "a" followed by thousands of them would overflow the stack).
  Expr term() {
    Expr e = atom();
    // llama.cpp's parser takes "x *" as "x*": blanks, and inside a group line breaks and comments too (at the
    // top level a line break ends the rule there).
    if (depth_ > 1)
      skip_space();
    else
      while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
    if (at_end()) return e;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      e = repeat(std::move(e), c == '+' ? 1 : 0, c == '?' ? 1 : Expr::kUnbounded);
    } else if (c == '{') {
      ++pos_;
      skip_space();
      const size_t digits_at = pos_;
      const uint32_t min = number(0);
      const bool counted = pos_ > digits_at;
      uint32_t max = min;
      skip_space();
      if (eat(",")) {
        skip_space();
        max = !at_end() && peek() == '}' ? Expr::kUnbounded : number(-1);
        skip_space();
      } else if (!counted) {
        refuse("a count was expected in '{...}'");
      }
      if (!eat("}")) refuse("'}' was expected to close the repetition count");
      if (max < min) refuse("a repetition {m,n} with n below m");
      e = repeat(std::move(e), min, max);
    } else {
      return e;
    }
    if (!at_end() && std::string_view("*+?{").find(peek()) != std::string_view::npos)
      refuse("a quantifier follows a quantifier (group the first: (x*)?)");
    return e;
  }

  // A count; `absent`: the value when there are no digits (-1: refused).
  uint32_t number(int64_t absent) {
    if (at_end() || peek() < '0' || peek() > '9') {
      if (absent < 0) refuse("a count was expected in '{...}'");
      return static_cast<uint32_t>(absent);
    }
    uint64_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      ++pos_;
      if (v > kMaxCount) refuse("a repetition count above " + std::to_string(kMaxCount));
    }
    return static_cast<uint32_t>(v);
  }

  Expr atom() {
    const char c = peek();
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (true) {
        if (at_end()) refuse("a string literal without its closing '\"'");
        if (eat("\"")) break;
        bytes += utf8_encode(character());
      }
      return literal(bytes);
    }
    if (c == '[') {
      ++pos_;
      return one_of(char_class());
    }
    if (c == '.') {
      ++pos_;
      return one_of(characters({{0, kMaxCodePoint}}));
    }
    if (c == '(') {
      ++pos_;
      Expr inner = alternatives();
      skip_space();
      if (!eat(")")) refuse("a '(' without its ')'");
      return inner;
    }
    if (is_name_char(c)) {
      const size_t at = pos_;
      const std::string name = rule_name();
      used_.emplace(name, at);
      return GrammarBuilder::ref(builder_.rule(name));
    }
    if (c == ')') refuse("a ')' without its '('");
    // llama.cpp's token references (<think>, <[151668]>, negated with !): a token, not text, which the matcher
    // does not see; write the token's text as a string instead.
    if (c == '<' || (c == '!' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '<'))
      refuse(
          "a token reference (<think>, <[id]>): qinfer's grammars match text only; write the token's text as a "
          "string (\"<think>\")");
    if (c == '*' || c == '+' || c == '?' || c == '{') refuse(std::string("'") + c + "' with nothing to repeat");
    refuse(std::string("unexpected '") + c + "'");
  }

  static Expr one_of(const CodePointRanges& r) {
    std::vector<Expr> alts = utf8_alternatives(r);
    return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
  }

  // After '['.
  CodePointRanges char_class() {
    const bool negated = eat("^");
    CodePointRanges set;
    while (true) {
      if (at_end()) refuse("a '[' without its ']'");
      if (eat("]")) break;
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (text_.substr(pos_, 1) == "-" && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = character();
        if (hi < lo) refuse("a range out of order in a character class");
      }
      set.push_back({lo, hi});
    }
    CodePointRanges out = negated ? complement(set) : characters(normalized(set));
    if (out.empty()) refuse("a character class no character matches");
    return out;
  }

  // One character of a literal or class: itself (UTF-8) or an escape.
  uint32_t character() {
    if (!eat("\\")) {
      uint32_t c = 0;
      if (!next_code_point(text_, pos_, c)) refuse("the grammar is not UTF-8");
      return c;
    }
    if (at_end()) refuse("the grammar ends in '\\'");
    const char e = text_[pos_++];
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x':
        return code_point(2);
      case 'u':
        return code_point(4);
      case 'U':
        return code_point(8);
      default:
        // '-' too is a name's character, and llama.cpp's own converters write "\-" in classes.
        if (is_name_char(e) && e != '-') refuse(std::string("the escape \\") + e + " is not known");
        --pos_;
        uint32_t c = 0;
        if (!next_code_point(text_, pos_, c)) refuse("the grammar is not UTF-8");
        return c;
    }
  }

  uint32_t code_point(int digits) {
    uint32_t v = 0;
    if (!read_hex(text_, pos_, digits, v)) refuse("an escape needs " + std::to_string(digits) + " hex digits");
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF))
      refuse("an escape of no character (a surrogate or beyond U+10FFFF)");
    return v;
  }

  static constexpr int kMaxDepth = 64;
  static constexpr uint64_t kMaxCount = 10000;
  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  GrammarBuilder builder_;
  std::unordered_map<std::string, size_t> defined_, used_;  // rule name -> where first defined / used
};

}  // namespace

Grammar gbnf_grammar(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace qinfer::grammar
