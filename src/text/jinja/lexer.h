// Splits a Jinja template into tokens the way jinja2's lexer does with
// transformers' settings (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False): template text, `{{ }}` / `{% %}` delimiters,
// and the names, literals and operators inside them. Comments and the
// whitespace that `-`, trim_blocks and lstrip_blocks remove never reach the
// parser.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::jinja {

// The template text with newlines normalised to "\n", and line:column lookup
// for messages.
class Source {
 public:
  Source(std::string name, const std::string& text);  // throws Error on invalid UTF-8
  const std::string& text() const { return text_; }
  const std::string& name() const { return name_; }
  // "name:line:column" for a byte offset (1-based line, 1-based column in characters).
  std::string where(size_t offset) const;
  [[noreturn]] void fail_at(size_t offset, const std::string& message) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

enum class TokenType {
  Data,           // template text, printed as is
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,    // text holds the unescaped value
  Integer,   // int_value
  Float,     // float_value
  Operator,  // text holds the operator: "+", "//", "(", ...
  Eof,
};

struct Token {
  TokenType type;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  size_t offset = 0;  // byte offset in Source::text()

  bool is_operator(const char* op) const { return type == TokenType::Operator && text == op; }
  bool is_name(const char* name) const { return type == TokenType::Name && text == name; }
};

// The token stream of the whole template, ending with an Eof token.
std::vector<Token> tokenize(const Source& source);

// What a token is, for "expected X, got Y" messages.
std::string describe(const Token& token);

}  // namespace qinfer::jinja
