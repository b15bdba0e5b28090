#include "server/json_tool_call.h"

#include <nlohmann/json.hpp>

namespace qinfer::server {

namespace {

// JSON's whitespace.
bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// A name longer than this is no function's, and a header longer than this
// no call's: the body is read whole instead of held undecided (and read
// again with every piece).
constexpr size_t kMaxName = 1024, kMaxHeader = 4096;

// Reads `{"name": "...", "arguments": {` off the start of a body that may
// still be growing: Undecided while the body is a beginning of it.
class HeaderCursor {
 public:
  explicit HeaderCursor(std::string_view body) : body_(body) {}
  using Shape = JsonToolCallReader::Shape;

  Shape read(std::string& name, size_t& arguments_begin) {
    Shape s = Shape::Undecided;
    if ((s = literal("{")) != Shape::Streamed || (s = literal("\"name\"")) != Shape::Streamed ||
        (s = literal(":")) != Shape::Streamed || (s = string(name)) != Shape::Streamed ||
        (s = literal(",")) != Shape::Streamed || (s = literal("\"arguments\"")) != Shape::Streamed ||
        (s = literal(":")) != Shape::Streamed || (s = literal("{")) != Shape::Streamed)
      return s;
    arguments_begin = at_ - 1;
    return Shape::Streamed;
  }

 private:
  // Streamed here means "matched, go on".
  Shape literal(std::string_view text) {
    while (at_ < body_.size() && is_json_space(body_[at_])) ++at_;
    const std::string_view rest = body_.substr(at_, text.size());
    if (rest != text.substr(0, rest.size())) return Shape::Other;
    if (rest.size() < text.size()) return Shape::Undecided;
    at_ += text.size();
    return Shape::Streamed;
  }

  Shape string(std::string& out) {
    if (const Shape s = literal("\""); s != Shape::Streamed) return s;
    const size_t begin = at_ - 1;
    for (bool escaped = false; at_ < body_.size(); ++at_) {
      if (at_ - begin > kMaxName) return Shape::Other;
      const char c = body_[at_];
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        break;
    }
    if (at_ == body_.size()) return at_ - begin > kMaxName ? Shape::Other : Shape::Undecided;
    ++at_;
    const auto j = nlohmann::json::parse(body_.substr(begin, at_ - begin), nullptr, false);
    if (j.is_discarded() || !j.is_string()) return Shape::Other;
    out = j.get<std::string>();
    return Shape::Streamed;
  }

  std::string_view body_;
  size_t at_ = 0;
};

}  // namespace

void JsonToolCallReader::decide() {
  std::string name;
  size_t begin = 0;
  shape_ = HeaderCursor(body_).read(name, begin);
  if (shape_ == Shape::Undecided && body_.size() > kMaxHeader) shape_ = Shape::Other;
  if (shape_ == Shape::Streamed) name_ = std::move(name), arguments_begin_ = begin;
}

std::string JsonToolCallReader::push(std::string_view text) {
  if (shape_ == Shape::Other) return {};  // read whole at its end, from the parser's own copy
  body_ += text;
  if (shape_ == Shape::Undecided) decide();
  std::string arguments;
  for (; lexed_ < body_.size(); ++lexed_) {
    const char c = body_[lexed_];
    const bool in_arguments = shape_ == Shape::Streamed && lexed_ >= arguments_begin_ && !arguments_closed();
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      --depth_;
    }
    if (!in_arguments || (!in_string_ && is_json_space(c))) continue;
    arguments += c;
    // The arguments object sits at depth 2, inside the call's own braces.
    if (depth_ == 1) arguments_end_ = lexed_ + 1;
  }
  return arguments;
}

}  // namespace qinfer::server
