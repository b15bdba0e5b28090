// Qwen3-Coder's tool calls. Where Qwen3 writes a JSON object inside
// <tool_call>, Qwen3-Coder's chat template teaches XML:
//   <function=NAME>
//   <parameter=KEY>
//   VALUE (any text, lines included)
//   </parameter>
//   </function>
// Values are text, so each becomes the JSON its parameter's schema type
// names (its "type", or the first but "null" of an "anyOf"), as vLLM's
// qwen3_coder tool parser converts them: a parameter the tool does not
// declare, or of a string type, stays a string ("null" too, unless the
// schema admits null); otherwise "null" or "None" (any case) is null; integer
// types an integer, number types a number (an integer when whole), boolean
// types true when the text is "true" (any case) and false otherwise, any
// other type parsed as JSON. Text that does not convert stays a string.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/tool_call.h"
#include "text/jinja/chat_template.h"

namespace qinfer::server {

// The {name, parameters} object of the function named `name` among the
// request's tools, or nullptr where none is.
const nlohmann::ordered_json* offered_function(const nlohmann::ordered_json& tools, std::string_view name);

// A <function=NAME>'s NAME as calls take it: not empty, and no whitespace,
// quotes, braces or angle brackets in it (a template's {{ }} is no name).
bool is_function_name(std::string_view name);

// Whether the template (as rendered with tools) teaches the XML form.
bool teaches_xml_tool_calls(const ChatTemplate& chat_template);

// The calls in a <tool_call> body (the text between the tags): one per
// <function=NAME>...</function>, as vLLM reads them; none when the body holds
// anything else but whitespace around them (that text stays visible), or a
// NAME with spaces, quotes, braces or angle brackets. `tools` is the
// request's list of {"type": "function", "function": {name, parameters}}.
// A closing tag ends its element only where whitespace and the next element
// (or the end) follow it, so code in a value may mention </parameter> or
// </function>; an element left open ends at the next one or the end. One
// newline is taken off each end of a value.
std::vector<ToolCall> parse_xml_tool_calls(std::string_view body, const nlohmann::ordered_json& tools);

// The same calls read as the model writes them, so that a stream can show
// them as they come: each call is announced once its first parameter (or
// its end) is read, each parameter follows once its key is read, and a
// value of a string type streams as it comes (other types, whose JSON needs
// the whole text, when the value ends). A value's end is known only when
// what follows a closing tag is (the rules above), so text that may still
// end it is held back. The arguments join to the object parse_xml_tool_calls
// gives for the same body (a key written twice appears twice, the later
// value then the one a JSON reader keeps). A body that fails the rules
// before a call is announced is Other; after, the reader stops: the
// arguments sent stand, unfinished (as a JSON call cut short does), and the
// text from the element that failed on is no call's (unread_from).
class XmlToolCallReader {
 public:
  enum class Shape { Undecided, Streamed, Other };
  struct Piece {
    std::string name;       // not empty: a call begins, and these are its first arguments
    std::string arguments;  // more of the latest call's arguments
  };

  explicit XmlToolCallReader(const nlohmann::ordered_json* tools = nullptr) : tools_(tools) {}
  std::vector<Piece> push(std::string_view text);
  // The body ended after its first `length` bytes (what came after them,
  // held back, is no part of it): the last value and call close.
  std::vector<Piece> finish(size_t length);
  Shape shape() const { return shape_; }
  // The body, to its end, was calls (what parse_xml_tool_calls takes).
  bool read_whole() const { return state_ == State::Done; }
  // Where the text no call holds begins, once the reader stopped after a call was announced.
  size_t unread_from() const { return unread_from_; }

 private:
  enum class State { Function, Name, Inner, Key, Value, Done, Failed };
  enum class Verdict { Undecided, No, Yes };
  struct End {
    Verdict verdict = Verdict::No;
    size_t value_end = 0, resume = 0;  // where the value (if one is open) ends and reading goes on
    bool function_ends = false;        // else the next parameter's key follows
  };

  bool step(std::vector<Piece>& out);  // false: wait for more text, or stop
  End function_end_at(size_t at) const;
  End value_end_at(size_t at) const;
  bool may_be_cut_at(size_t at) const;
  size_t skip_space_from(size_t from) const;
  void stream_value(size_t safe, std::vector<Piece>& out);
  void end_value(size_t value_end, std::vector<Piece>& out);
  void end_function(size_t resume, std::vector<Piece>& out);
  static void send(std::string_view arguments, std::vector<Piece>& out);
  void fail();

  const nlohmann::ordered_json* tools_;
  std::string body_;
  bool final_ = false;  // body_ is whole
  Shape shape_ = Shape::Undecided;
  State state_ = State::Function;
  size_t pos_ = 0;            // where reading goes on (in a value: the first place its end may be)
  size_t tag_end_ = 0;        // the end of the <function= or <parameter= tag being read
  size_t element_start_ = 0;  // where that element (or what stands in its place) begins
  size_t unread_from_ = std::string::npos;
  mutable std::vector<std::pair<size_t, size_t>> spaces_;  // whitespace runs read while waiting at memo_pos_
  mutable size_t memo_pos_ = 0;
  mutable State memo_state_ = State::Function;
  std::string name_;
  const nlohmann::ordered_json* parameters_ = nullptr;  // the current function's declared parameters
  std::unordered_set<std::string> keys_;                // its keys so far
  std::string key_;
  bool value_streams_ = false;
  bool value_begun_ = false;           // its first byte (a newline there is no part of it) is read
  size_t value_start_ = 0, sent_ = 0;  // of the open value: its first byte, and the end of what was sent
};

}  // namespace qinfer::server
