// Qwen3's tool call, {"name": NAME, "arguments": {...}} inside <tool_call>,
// read as the model writes it: once the name and the opening brace of the
// arguments are in, the call can be announced, and its arguments sent as
// they come (as OpenAI streams them), instead of in one piece at the end.
// The arguments are the model's text with the whitespace outside strings
// left out (the compact form a parsed and printed object has), so a stream's
// pieces join to what the whole answer gives.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace qinfer::server {

class JsonToolCallReader {
 public:
  enum class Shape {
    Undecided,  // the body so far is a beginning of {"name": "...", "arguments": {
    Streamed,   // it began so: the name is known, the arguments stream
    Other,      // anything else (other key order, arguments not an object, not JSON): read whole at the end
  };

  // Takes more of the body; returns the arguments' text it added (empty before the shape is Streamed).
  std::string push(std::string_view text);

  Shape shape() const { return shape_; }
  const std::string& name() const { return name_; }
  bool arguments_closed() const { return arguments_end_ != std::string::npos; }

 private:
  void decide();

  std::string body_;
  Shape shape_ = Shape::Undecided;
  std::string name_;
  size_t arguments_begin_ = std::string::npos, arguments_end_ = std::string::npos;
  size_t lexed_ = 0;  // bytes of body_ the lexer has read
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

}  // namespace qinfer::server
