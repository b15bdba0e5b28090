#include "text/grammar/regex.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "text/grammar/code_points.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

using Ranges = CodePointRanges;

// A set of characters as the flavours read it: `sure`, what every flavour
// matches (what output may hold); `maybe`, what some flavour matches.
struct Chars {
  Ranges sure, maybe;
};
Chars one(uint32_t c) { return {{{c, c}}, {{c, c}}}; }
Chars unite(const Chars& a, const Chars& b) { return {united(a.sure, b.sure), united(a.maybe, b.maybe)}; }
Chars negate(const Chars& c) { return {complement(c.maybe), complement(c.sure)}; }

const Ranges kNonAscii = {{0x80, kMaxCodePoint}};
Chars ascii_class(Ranges ascii, Ranges beyond = kNonAscii) { return {normalized(ascii), united(ascii, beyond)}; }
Chars digit_chars() { return ascii_class({{'0', '9'}}); }
Chars word_chars() { return ascii_class({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
// ECMA-262's \s has \v and Unicode spaces; Python's has \x1c-\x1f too.
Chars space_chars() { return ascii_class({{'\t', '\r'}, {' ', ' '}}, united({{0x1c, 0x1f}}, kNonAscii)); }
// '.': ECMA-262 leaves out \n \r U+2028 U+2029, Python only \n.
Chars dot_chars() { return {complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), complement({{'\n', '\n'}})}; }

// The characters of `r` as JSON string contents: printable ASCII as is, '"'
// and '\\' and control characters escaped, the rest in UTF-8.
std::vector<Expr> json_chars(const Ranges& r) {
  std::vector<Expr> alts;
  ByteSet plain;
  for (const auto& [lo, hi] : r) {
    for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x7F); ++c) {
      if (c >= 0x20 && c != '"' && c != '\\') {
        plain.set(c);
        continue;
      }
      static const char* kHex = "0123456789abcdef";
      std::string escape = c == '"'    ? "\\\""
                           : c == '\\' ? "\\\\"
                           : c == '\b' ? "\\b"
                           : c == '\f' ? "\\f"
                           : c == '\n' ? "\\n"
                           : c == '\r' ? "\\r"
                           : c == '\t' ? "\\t"
                                       : std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
      alts.push_back(literal(escape));
    }
    if (hi >= 0x80) utf8_sequences(std::max<uint32_t>(lo, 0x80), hi, alts);
  }
  if (plain.any()) alts.insert(alts.begin(), bytes(plain));
  return alts;
}

// Part of a pattern, and the fewest and most characters it matches.
struct Piece {
  Expr expr;
  uint64_t min = 0, max = 0;  // max: kUnboundedLength when unbounded
  bool nullable() const { return min == 0; }
};

uint64_t add_lengths(uint64_t a, uint64_t b) {
  return a == kUnboundedLength || b == kUnboundedLength ? kUnboundedLength : std::min(a + b, kUnboundedLength - 1);
}
uint64_t times(uint64_t length, uint32_t count) {
  if (count == 0 || length == 0) return 0;
  if (count == Expr::kUnbounded || length == kUnboundedLength) return kUnboundedLength;
  if (length > (kUnboundedLength - 1) / count) return kUnboundedLength - 1;  // nested counts: saturated
  return length * count;
}

class PatternParser {
 public:
  // `any_char`: what follows an unanchored end of a JSON string's pattern;
  // null for a whole text, which a match spans.
  // `builder`, where given, makes literal alternatives a trie (GrammarBuilder::alternation).
  PatternParser(std::string_view text, const Expr* any_char, GrammarBuilder* builder = nullptr)
      : text_(text), any_char_(any_char), builder_(builder) {}

  // An unanchored start is written as one: the match comes first (what
  // follows may be anything). A string that holds a match anywhere would be
  // as valid, but every position could then start one, and a counted '.' or
  // class ('.{40}') would follow as many matches at once.
  PatternGrammar parse() {
    std::vector<Expr> alts;
    PatternGrammar out{{}, kUnboundedLength, 0};
    do {
      eat('^');
      std::vector<Expr> terms;
      uint64_t min = 0, max = 0;
      bool end = false;
      while (!at_end() && peek() != '|') {
        if (peek() == '$') {
          ++pos_;
          if (!at_end() && peek() != '|')
            refuse("'$' is followed only at the end of the pattern or of a top-level '|' branch");
          end = true;
          break;
        }
        Piece t = term();
        min = add_lengths(min, t.min);
        max = add_lengths(max, t.max);
        terms.push_back(std::move(t.expr));
      }
      if (!end && any_char_) {
        terms.push_back(star(*any_char_));
        max = kUnboundedLength;
      }
      out.min_length = std::min(out.min_length, min);
      out.max_length = std::max(out.max_length, max);
      alts.push_back(sequence(std::move(terms)));
    } while (eat('|'));
    out.contents = alternation(std::move(alts));
    return out;
  }

 private:
  [[noreturn]] void refuse(const std::string& what) {
    std::string shown(text_.substr(0, 64));
    if (text_.size() > 64) shown += "...";
    fail("pattern '", shown, "': ", what, " (at byte ", pos_, ")");
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  // A hunt finding: 5,000 literal words as one alternation failed ("more than 4096 ways") where the same list as
  // GBNF or `choice` works.
  Expr alternation(std::vector<Expr> alts) {
    if (builder_) return builder_->alternation(std::move(alts));
    return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
  }
  bool eat(char c) {
    if (at_end() || peek() != c) return false;
    ++pos_;
    return true;
  }

  // A code point of the pattern itself (UTF-8).
  uint32_t next_code_point() {
    uint32_t c = 0;
    if (!grammar::next_code_point(text_, pos_, c)) refuse("the pattern is not UTF-8");
    return c;
  }

  Piece disjunction() {
    if (++depth_ > kMaxDepth) refuse("groups nested deeper than " + std::to_string(kMaxDepth) + " levels");
    std::vector<Expr> alts;
    uint64_t min = kUnboundedLength, max = 0;
    do {
      std::vector<Expr> terms;
      uint64_t alt_min = 0, alt_max = 0;
      while (!at_end() && peek() != '|' && peek() != ')') {
        Piece t = term();
        alt_min = add_lengths(alt_min, t.min);
        alt_max = add_lengths(alt_max, t.max);
        terms.push_back(std::move(t.expr));
      }
      min = std::min(min, alt_min);
      max = std::max(max, alt_max);
      alts.push_back(sequence(std::move(terms)));
    } while (eat('|'));
    --depth_;
    return {alternation(std::move(alts)), min, max};
  }

  Piece term() {
    Piece atom_piece = atom();
    uint32_t min = 0, max = 0;
    if (!quantifier(min, max)) return atom_piece;
    eat('?');  // lazy: the same strings
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && is_quantifier())))
      refuse("a quantifier follows a quantifier");
    // Each repetition of something that may match nothing may be skipped: as
    // many ways to be at a count as there are counts.
    if (max > 1 && atom_piece.nullable()) refuse("repeats something that may match nothing");
    return {repeat(std::move(atom_piece.expr), min, max), times(atom_piece.min, min), times(atom_piece.max, max)};
  }

  // {n}, {n,}, {n,m} at pos_ (else '{' is a literal, as both flavours read
  // it, but for {,m}: a quantifier to Python, a literal to ECMA-262).
  bool is_quantifier() {
    if (text_.substr(pos_, 2) == "{,") refuse("'{,' (read apart by flavours)");
    size_t p = pos_ + 1, digits = 0;
    while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p, ++digits;
    if (digits == 0) return false;
    if (p < text_.size() && text_[p] == ',') {
      ++p;
      while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
    }
    return p < text_.size() && text_[p] == '}';
  }
  uint32_t number() {
    uint64_t v = 0;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (v > 10000) refuse("a repetition count above 10000");
    }
    return static_cast<uint32_t>(v);
  }
  bool quantifier(uint32_t& min, uint32_t& max) {
    if (at_end()) return false;
    switch (peek()) {
      case '*':
        ++pos_, min = 0, max = Expr::kUnbounded;
        return true;
      case '+':
        ++pos_, min = 1, max = Expr::kUnbounded;
        return true;
      case '?':
        ++pos_, min = 0, max = 1;
        return true;
      case '{':
        if (!is_quantifier()) return false;
        ++pos_;
        min = max = number();
        if (eat(',')) max = !at_end() && peek() == '}' ? Expr::kUnbounded : number();
        eat('}');
        if (max < min) refuse("a repetition {n,m} with m below n");
        return true;
      default:
        return false;
    }
  }

  Piece chars(const Chars& c) {
    std::vector<Expr> alts = any_char_ ? json_chars(characters(c.sure)) : utf8_alternatives(characters(c.sure));
    if (alts.empty()) refuse("a class no character matches in every flavour");
    return {alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts)), 1, 1};
  }

  Piece atom() {
    const char c = peek();
    switch (c) {
      case '(': {
        ++pos_;
        if (eat('?')) {
          if (eat(':')) {
          } else {  // (?<name>...) too: Python's re reads only (?P<name>...)
            refuse("lookaround, named and other (?...) groups are not followed");
          }
        }
        Piece inner = disjunction();
        if (!eat(')')) refuse("a '(' without its ')'");
        return inner;
      }
      case ')':
        refuse("a ')' without its '('");
      case '[':
        ++pos_;
        return chars(char_class());
      case '.':
        ++pos_;
        return chars(dot_chars());
      case '\\':
        ++pos_;
        return chars(escape(false));
      case '^':
      case '$':
        refuse("'^' and '$' are followed only at the start and end of the pattern");
      case '*':
      case '+':
      case '?':
        refuse("a quantifier with nothing to repeat");
      case '{':
        if (is_quantifier()) refuse("a quantifier with nothing to repeat");
        [[fallthrough]];
      default:
        return chars(one(next_code_point()));
    }
  }

  uint32_t hex_digits(int n) {
    uint32_t v = 0;
    if (!read_hex(text_, pos_, n, v)) refuse("an escape needs " + std::to_string(n) + " hex digits");
    return v;
  }

  // After a '\\'; in a class, \b is a backspace.
  Chars escape(bool in_class) {
    if (at_end()) refuse("the pattern ends in '\\'");
    const char c = text_[pos_++];
    switch (c) {
      case 'd':
        return digit_chars();
      case 'D':
        return negate(digit_chars());
      case 'w':
        return word_chars();
      case 'W':
        return negate(word_chars());
      case 's':
        return space_chars();
      case 'S':
        return negate(space_chars());
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'x':
        return one(hex_digits(2));
      case 'u': {  // a surrogate: one half of a pair to ECMA-262, a character of its own to Python
        const uint32_t v = hex_digits(4);
        if (v >= 0xD800 && v <= 0xDFFF) refuse("a surrogate escape (read apart by flavours; write the character)");
        return one(v);
      }
      case '0':
        if (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) refuse("octal escapes are not followed");
        return one(0);
      case 'b':
        if (in_class) return one('\b');
        refuse("word boundaries (\\b) are not followed");
      default:
        if (std::isalnum(static_cast<unsigned char>(c)))
          refuse(std::string("the escape \\") + c +
                 " is not followed (backreference, assertion, or read apart by flavours)");
        --pos_;
        return one(next_code_point());
    }
  }

  // After '['.
  Chars char_class() {
    const bool negated = eat('^');
    if (!at_end() && peek() == ']') refuse("a class starting with ']' (flavours read it apart)");
    Chars set{{}, {}};
    while (true) {
      if (at_end()) refuse("a '[' without its ']'");
      if (eat(']')) break;
      bool single = true;
      Chars item = member(single);
      if (!at_end() && peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        bool single_hi = true;
        Chars hi = member(single_hi);
        if (!single || !single_hi) refuse("a range with a class escape at one end");
        const uint32_t a = item.sure[0].first, b = hi.sure[0].first;
        if (b < a) refuse("a range out of order");
        item = {{{a, b}}, {{a, b}}};
      }
      set = unite(set, item);
    }
    return negated ? negate(set) : set;
  }
  Chars member(bool& single) {
    if (eat('\\')) {
      const char e = at_end() ? '\0' : peek();
      single = std::string_view("dDwWsS").find(e) == std::string_view::npos;
      return escape(true);
    }
    if (peek() == '[' && pos_ + 1 < text_.size() &&
        (text_[pos_ + 1] == ':' || text_[pos_ + 1] == '=' || text_[pos_ + 1] == '.'))
      refuse("POSIX classes ([:alpha:]) are not followed");
    return one(next_code_point());
  }

  static constexpr int kMaxDepth = 64;
  std::string_view text_;
  const Expr* any_char_;
  GrammarBuilder* builder_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

PatternGrammar pattern_contents(std::string_view pattern, const Expr& any_char) {
  return PatternParser(pattern, &any_char).parse();
}

Grammar regex_grammar(std::string_view regex) {
  GrammarBuilder b;
  const int32_t root = b.rule("root");
  b.define(root, PatternParser(regex, nullptr, &b).parse().contents);
  return std::move(b).build(root);
}

}  // namespace qinfer::grammar
