#include "text/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "text/jinja/pystring.h"
#include "text/jinja/unicode_chars.h"
#include "util/error.h"
#include "util/utf8.h"

namespace qinfer::jinja {

Source::Source(std::string name, const std::string& text) : name_(std::move(name)) {
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    fail(name_, ": invalid UTF-8 at byte ", bad);
  // jinja2 turns \r\n and \r into \n and drops one trailing newline.
  text_.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      text_ += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      text_ += text[i];
    }
  }
  if (!text_.empty() && text_.back() == '\n') text_.pop_back();
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

std::string Source::where(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
  size_t line = static_cast<size_t>(it - line_starts_.begin()) + 1;
  size_t column = count_code_points(std::string_view(text_).substr(*it, offset - *it)) + 1;
  return name_ + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void Source::fail_at(size_t offset, const std::string& message) const { throw Error(where(offset) + ": " + message); }

std::string describe(const Token& token) {
  switch (token.type) {
    case TokenType::Data:
      return "template data";
    case TokenType::VariableBegin:
      return "begin of print statement";
    case TokenType::VariableEnd:
      return "end of print statement";
    case TokenType::BlockBegin:
      return "begin of statement block";
    case TokenType::BlockEnd:
      return "end of statement block";
    case TokenType::Name:
      return "'" + token.text + "'";
    case TokenType::String:
      return "string " + py_str_repr(token.text);
    case TokenType::Integer:
      return "integer";
    case TokenType::Float:
      return "float";
    case TokenType::Operator:
      return "'" + token.text + "'";
    case TokenType::Eof:
      return "end of template";
  }
  return "token";
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_name_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

class Lexer {
 public:
  explicit Lexer(const Source& source) : src_(source), s_(source.text()) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) lex_text();
    push(TokenType::Eof, "", s_.size());
    return std::move(tokens_);
  }

 private:
  // Root state: template text up to the next `{{`, `{%` or `{#`.
  void lex_text() {
    size_t open = pos_;
    while (true) {
      open = s_.find('{', open);
      if (open == std::string::npos || open + 1 >= s_.size()) {
        push_data(s_.substr(pos_), pos_);
        pos_ = s_.size();
        return;
      }
      char kind = s_[open + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
      ++open;
    }
    char kind = s_[open + 1];
    size_t after = open + 2;
    char sign = (after < s_.size() && (s_[after] == '-' || s_[after] == '+')) ? s_[after] : 0;
    if (sign) ++after;
    size_t raw_body = kind == '%' ? match_raw_begin(after) : std::string::npos;

    std::string text = s_.substr(pos_, open - pos_);
    if (sign == '-') {
      text = py_strip(text, std::nullopt, false, true);
    } else if (sign != '+' && kind != '{') {
      lstrip_line(text);
    }
    push_data(std::move(text), pos_);

    if (raw_body != std::string::npos) {
      line_starting_ = s_[raw_body - 1] == '\n';
      lex_raw(raw_body, open);
    } else if (kind == '#') {
      lex_comment(after, open);
    } else {
      line_starting_ = false;
      lex_tag(kind == '{', after, open);
    }
  }

  // lstrip_blocks: spaces and tabs between the line start and a block tag go.
  void lstrip_line(std::string& text) const {
    size_t line_start = text.rfind('\n');
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    if (line_start == 0 && !line_starting_) return;
    std::u32string tail = decode_utf8(std::string_view(text).substr(line_start));
    if (!tail.empty() && std::all_of(tail.begin(), tail.end(), is_py_space)) text.resize(line_start);
  }

  // `{% raw %}` (after the opener and its sign): returns where the raw body
  // starts, or npos when this is not a raw tag.
  size_t match_raw_begin(size_t p) const {
    p = skip_space(p);
    if (s_.compare(p, 3, "raw") != 0) return std::string::npos;
    p = skip_space(p + 3);
    if (s_.compare(p, 3, "-%}") == 0) return skip_space(p + 3);
    if (s_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  void lex_raw(size_t body, size_t open) {
    if (body >= s_.size()) {  // as for comments: nothing after the opener is accepted
      pos_ = body;
      return;
    }
    for (size_t p = s_.find("{%", body); p != std::string::npos; p = s_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ? s_[q] : 0;
      if (sign) ++q;
      q = skip_space(q);
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(q + 6);
      size_t end = match_block_end(q);
      if (end == std::string::npos) continue;
      std::string text = s_.substr(body, p - body);
      if (sign == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (sign != '+') {
        lstrip_line(text);
      }
      push_data(std::move(text), body);
      line_starting_ = s_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    src_.fail_at(open, "missing end of raw directive");
  }

  void lex_comment(size_t p, size_t open) {
    // jinja2 quietly accepts an opener that ends the template.
    if (p >= s_.size()) {
      pos_ = p;
      return;
    }
    for (; p < s_.size(); ++p) {
      if (s_.compare(p, 3, "+#}") == 0) {
        finish_tag(p + 3);
        return;
      }
      if (s_.compare(p, 3, "-#}") == 0) {
        finish_tag(skip_space(p + 3));
        return;
      }
      if (s_.compare(p, 2, "#}") == 0) {
        finish_tag(p + 2 < s_.size() && s_[p + 2] == '\n' ? p + 3 : p + 2);
        return;
      }
    }
    src_.fail_at(open, "missing end of comment tag");
  }

  // `+%}`, `-%}` + whitespace, or `%}` + one newline (trim_blocks): the end
  // of the match, or npos.
  size_t match_block_end(size_t p) const {
    if (s_.compare(p, 3, "+%}") == 0) return p + 3;
    if (s_.compare(p, 3, "-%}") == 0) return skip_space(p + 3);
    if (s_.compare(p, 2, "%}") == 0) return p + 2 < s_.size() && s_[p + 2] == '\n' ? p + 3 : p + 2;
    return std::string::npos;
  }

  size_t match_variable_end(size_t p) const {
    if (s_.compare(p, 3, "-}}") == 0) return skip_space(p + 3);
    if (s_.compare(p, 2, "}}") == 0) return p + 2;
    return std::string::npos;
  }

  void finish_tag(size_t end) {
    line_starting_ = end > 0 && s_[end - 1] == '\n';
    pos_ = end;
  }

  // Inside `{{ }}` or `{% %}`: tokens until the closing delimiter (which only
  // counts when brackets are balanced, so `{{ {'a': 1}}}` works).
  void lex_tag(bool variable, size_t p, size_t open) {
    push(variable ? TokenType::VariableBegin : TokenType::BlockBegin, "", open);
    std::vector<char> brackets;
    while (true) {
      if (brackets.empty()) {
        size_t end = variable ? match_variable_end(p) : match_block_end(p);
        if (end != std::string::npos) {
          push(variable ? TokenType::VariableEnd : TokenType::BlockEnd, "", p);
          finish_tag(end);
          return;
        }
      }
      size_t next = skip_space(p);
      if (next != p) {
        p = next;
        continue;
      }
      if (p >= s_.size()) {
        pos_ = p;  // the parser reports the missing end
        return;
      }
      p = lex_token(p, brackets);
    }
  }

  size_t lex_token(size_t p, std::vector<char>& brackets) {
    if (size_t end = match_float(p); end != std::string::npos) {
      std::string digits = without_underscores(p, end);
      Token& t = push(TokenType::Float, digits, p);
      t.float_value = std::strtod(digits.c_str(), nullptr);
      return end;
    }
    if (size_t end = match_integer(p); end != std::string::npos) {
      lex_integer(p, end);
      return end;
    }
    auto c = static_cast<unsigned char>(s_[p]);
    if (is_name_start(c)) {
      // Non-ASCII letters are taken as name characters (jinja2 allows
      // Unicode identifiers); Unicode whitespace still ends a name.
      size_t end = p;
      while (end < s_.size()) {
        auto [cp, size] = code_point_at(end);
        if (cp >= 0x80 ? is_py_space(cp)
                       : !(is_name_start(static_cast<unsigned char>(cp)) || is_digit(static_cast<char>(cp))))
          break;
        end += size;
      }
      push(TokenType::Name, s_.substr(p, end - p), p);
      return end;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kLongOps[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kLongOps)
      if (s_.compare(p, 2, op) == 0) {
        push(TokenType::Operator, op, p);
        return p + 2;
      }
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(static_cast<char>(c)) != std::string_view::npos) {
      check_brackets(static_cast<char>(c), p, brackets);
      push(TokenType::Operator, std::string(1, static_cast<char>(c)), p);
      return p + 1;
    }
    std::string ch = encode_utf8(decode_utf8(std::string_view(s_).substr(p, 4)).substr(0, 1));
    src_.fail_at(p, "unexpected char " + py_str_repr(ch));
  }

  void check_brackets(char c, size_t p, std::vector<char>& brackets) {
    if (c == '(') brackets.push_back(')');
    if (c == '[') brackets.push_back(']');
    if (c == '{') brackets.push_back('}');
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) src_.fail_at(p, std::string("unexpected '") + c + "'");
      char expected = brackets.back();
      brackets.pop_back();
      if (expected != c) src_.fail_at(p, std::string("unexpected '") + c + "', expected '" + expected + "'");
    }
  }

  // (\d+_)*\d+ : digits with single underscores between them.
  size_t match_digits(size_t p) const {
    if (p >= s_.size() || !is_digit(s_[p])) return std::string::npos;
    size_t end = p;
    while (end < s_.size() && is_digit(s_[end])) {
      ++end;
      if (end + 1 < s_.size() && s_[end] == '_' && is_digit(s_[end + 1])) ++end;
    }
    return end;
  }

  size_t match_exponent(size_t p) const {
    if (p >= s_.size() || (s_[p] != 'e' && s_[p] != 'E')) return std::string::npos;
    ++p;
    if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
    return match_digits(p);
  }

  // jinja2's float_re: digits with a fraction and/or an exponent, not right after a '.'.
  size_t match_float(size_t p) const {
    if (p > 0 && s_[p - 1] == '.') return std::string::npos;
    size_t whole = match_digits(p);
    if (whole == std::string::npos) return std::string::npos;
    size_t fraction = (whole < s_.size() && s_[whole] == '.') ? match_digits(whole + 1) : std::string::npos;
    if (fraction != std::string::npos) {
      size_t exp = match_exponent(fraction);
      return exp != std::string::npos ? exp : fraction;
    }
    return match_exponent(whole);
  }

  // jinja2's integer_re: 0b/0o/0x prefixed, decimal without leading zeros, or zeros.
  size_t match_integer(size_t p) const {
    if (p >= s_.size() || !is_digit(s_[p])) return std::string::npos;
    if (s_[p] == '0' && p + 1 < s_.size()) {
      char prefix = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[p + 1])));
      int base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 0;
      if (base) {
        size_t end = p + 2;
        while (true) {
          size_t q = (end < s_.size() && s_[end] == '_') ? end + 1 : end;
          if (q >= s_.size() || digit_value(s_[q]) >= base) break;
          end = q + 1;
        }
        if (end > p + 2) return end;
      }
    }
    char first = s_[p];
    size_t end = p + 1;
    while (true) {
      size_t q = (end < s_.size() && s_[end] == '_') ? end + 1 : end;
      if (q >= s_.size() || !is_digit(s_[q]) || (first == '0' && s_[q] != '0')) break;
      end = q + 1;
    }
    return end;
  }

  static int digit_value(char c) {
    if (is_digit(c)) return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : 99;
  }

  void lex_integer(size_t p, size_t end) {
    std::string text = without_underscores(p, end);
    int base = 10;
    size_t start = 0;
    if (text.size() > 2 && text[0] == '0' && !is_digit(text[1])) {
      char prefix = static_cast<char>(std::tolower(static_cast<unsigned char>(text[1])));
      base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : 16;
      start = 2;
    }
    errno = 0;
    char* parsed_end = nullptr;
    unsigned long long v = std::strtoull(text.c_str() + start, &parsed_end, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      src_.fail_at(p, "integer literal " + text + " is too large (limit 2^63-1)");
    Token& t = push(TokenType::Integer, text, p);
    t.int_value = static_cast<int64_t>(v);
  }

  std::string without_underscores(size_t p, size_t end) const {
    std::string out;
    for (size_t i = p; i < end; ++i)
      if (s_[i] != '_') out += s_[i];
    return out;
  }

  // A quoted string with Python's unicode-escape rules, as jinja2 decodes it.
  size_t lex_string(size_t p) {
    char quote = s_[p];
    std::string value;
    size_t i = p + 1;
    while (true) {
      if (i >= s_.size()) src_.fail_at(p, "unterminated string literal");
      char c = s_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) src_.fail_at(p, "unterminated string literal");
      i = unescape(i, value);
    }
    push(TokenType::String, std::move(value), p);
    return i + 1;
  }

  // Decodes the escape at s_[i] == '\\' into value; returns the index after it.
  size_t unescape(size_t i, std::string& value) const {
    char e = s_[i + 1];
    switch (e) {
      case '\n':
        return i + 2;  // line continuation
      case '\\':
        value += '\\';
        return i + 2;
      case '\'':
        value += '\'';
        return i + 2;
      case '"':
        value += '"';
        return i + 2;
      case 'a':
        value += '\a';
        return i + 2;
      case 'b':
        value += '\b';
        return i + 2;
      case 'f':
        value += '\f';
        return i + 2;
      case 'n':
        value += '\n';
        return i + 2;
      case 'r':
        value += '\r';
        return i + 2;
      case 't':
        value += '\t';
        return i + 2;
      case 'v':
        value += '\v';
        return i + 2;
      case 'x':
        return unescape_hex(i, 2, value);
      case 'u':
        return unescape_hex(i, 4, value);
      case 'U':
        return unescape_hex(i, 8, value);
      case 'N':
        src_.fail_at(i, "\\N{...} escapes are not supported");
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      size_t j = i + 1;
      char32_t c = 0;
      for (int k = 0; k < 3 && j < s_.size() && s_[j] >= '0' && s_[j] <= '7'; ++k, ++j) c = c * 8 + (s_[j] - '0');
      utf8::append_code_point(value, c);
      return j;
    }
    if (static_cast<unsigned char>(e) >= 0x80) {
      // jinja2 backslash-escapes non-ASCII text before decoding, so "\é"
      // becomes a backslash followed by the escape's own text: "\xe9".
      auto [c, size] = code_point_at(i + 1);
      char buf[16];
      std::snprintf(buf, sizeof buf,
                    c < 0x100     ? "\\x%02x"
                    : c < 0x10000 ? "\\u%04x"
                                  : "\\U%08x",
                    static_cast<unsigned>(c));
      value += buf;
      return i + 1 + size;
    }
    value += '\\';  // unknown escapes stay as written
    value += e;
    return i + 2;
  }

  size_t unescape_hex(size_t i, int digits, std::string& value) const {
    char32_t c = 0;
    for (int k = 0; k < digits; ++k) {
      size_t j = i + 2 + k;
      int d = j < s_.size() ? digit_value(s_[j]) : 99;
      if (d >= 16) src_.fail_at(i, "truncated \\" + std::string(1, s_[i + 1]) + " escape");
      c = c * 16 + d;
    }
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) src_.fail_at(i, "escape does not name a valid code point");
    utf8::append_code_point(value, c);
    return i + 2 + digits;
  }

  // Python's \s: any whitespace character, ASCII or not.
  size_t skip_space(size_t p) const {
    while (p < s_.size()) {
      auto c = static_cast<unsigned char>(s_[p]);
      if (c < 0x80) {
        if (!is_py_space(c)) break;
        ++p;
        continue;
      }
      auto [cp, size] = code_point_at(p);
      if (!is_py_space(cp)) break;
      p += size;
    }
    return p;
  }

  // The code point starting at byte p and its length in bytes.
  std::pair<char32_t, size_t> code_point_at(size_t p) const {
    char32_t cp = decode_utf8(std::string_view(s_).substr(p, 4))[0];
    std::string encoded;
    utf8::append_code_point(encoded, cp);
    return {cp, encoded.size()};
  }

  Token& push(TokenType type, std::string text, size_t offset) {
    tokens_.push_back(Token{type, std::move(text), 0, 0, offset});
    return tokens_.back();
  }

  void push_data(std::string text, size_t offset) {
    if (!text.empty()) push(TokenType::Data, std::move(text), offset);
  }

  const Source& src_;
  const std::string& s_;
  size_t pos_ = 0;
  bool line_starting_ = true;  // the previous match ended with a newline
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const Source& source) { return Lexer(source).run(); }

}  // namespace qinfer::jinja
