// A Qwen3 reply split the way OpenAI-style clients read it: the reasoning
// (<think>...</think>) apart from the answer, and each
// <tool_call>{"name": ..., "arguments": ...}</tool_call> (or Qwen3-Coder's
// <tool_call><function=...>...</function></tool_call>, xml_tool_call.h) as
// a structured tool call. Text arrives in pieces (streaming); a piece that might begin a tag is
// held back until it is known, so raw tags never reach the content. A JSON
// call is announced once its name is read, an XML one once its first
// parameter opens, and the arguments follow as they come (json_tool_call.h,
// xml_tool_call.h); a JSON call of another shape comes whole when it closes. The non-streaming answer is the
// concatenation of the same deltas.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/json_tool_call.h"
#include "server/tool_call.h"
#include "server/xml_tool_call.h"

namespace qinfer::server {

// Which tool calls a reply may make. None: the request offered no tools (or
// said tool_choice "none"), so a <tool_call> the model writes anyway is text
// of the answer. One: parallel_tool_calls false, so calls after the first are
// dropped (as vLLM does). Any: every well-formed call.
enum class ToolCalls { None, One, Any };

struct ChatDelta {
  std::string reasoning, content;
  std::vector<ToolCall> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  // Joins the delta that came after this one: its calls' content_before
  // then count from this delta's start, and a continuation joins this
  // delta's last call.
  void append(ChatDelta&& later);
};

class ChatOutputParser {
 public:
  // starts_in_reasoning: the prompt left a <think> block open (the model's
  // first words are reasoning). xml_tools: the model writes Qwen3-Coder's
  // XML calls (JSON ones are still read: a required tool_choice's grammar
  // writes those); these are the request's tools, whose parameter types
  // give the values' JSON types.
  explicit ChatOutputParser(bool starts_in_reasoning = false, ToolCalls tool_calls = ToolCalls::Any,
                            std::shared_ptr<const nlohmann::ordered_json> xml_tools = nullptr);

  ChatDelta push(std::string_view text);
  ChatDelta finish();  // after the last piece: what was held back
  // A well-formed call was made (the reply then ends for its calls).
  bool saw_tool_call() const { return well_formed_calls_ > 0; }
  int calls_made() const { return tool_calls_; }      // announced or dropped, well formed or not
  int calls_closed() const { return calls_closed_; }  // bodies read as calls that have ended
  bool in_reasoning() const { return mode_ == Mode::Reasoning; }
  bool in_tool_call() const { return mode_ == Mode::ToolCall; }
  // Text held back (it may begin a tag): what came in is not all out or dropped yet.
  bool holds_text() const { return !held_.empty(); }

 private:
  enum class Mode { Content, Reasoning, ToolCall };
  void emit(std::string_view text, ChatDelta& out);
  void close_tool_call(ChatDelta& out, bool terminated);
  void open_tool_call();
  void take_tool_text(std::string_view text, ChatDelta& out);
  void announce_call(const std::string& name, ChatDelta& out);
  void send_arguments(std::string_view arguments, ChatDelta& out);
  void send_pieces(std::vector<XmlToolCallReader::Piece> pieces, ChatDelta& out);
  void check_bare_header(ChatDelta& out);
  void bare_header_is_text(ChatDelta& out);
  void close_bare_call(ChatDelta& out);

  Mode mode_;
  ToolCalls allowed_;
  std::shared_ptr<const nlohmann::ordered_json> xml_tools_;
  std::string held_;                       // text not yet classified (a possible tag prefix)
  std::string tool_text_;                  // the body of the open <tool_call>
  JsonToolCallReader json_call_;           // the same body, read as a JSON call as it comes
  XmlToolCallReader xml_call_;             // and as XML calls (where the model writes them)
  bool call_sent_ = false;                 // its call was announced (not one that parallel_tool_calls false drops)
  size_t open_entry_ = std::string::npos;  // the call's entry in the delta being made, if it has one
  bool strip_leading_;                     // drop whitespace at the start of a section after a tag
  bool seen_content_ = false;              // <think> opens reasoning only before any answer text
  int tool_calls_ = 0;                     // made, whether announced or dropped (parallel_tool_calls false)
  int well_formed_calls_ = 0;              // of them, those whose body was a whole call
  int calls_closed_ = 0;
  bool bare_ = false;              // the open call is a <function=...> written without <tool_call>
  bool bare_header_read_ = false;  // and its header names an offered tool
  bool orphan_close_ = false;      // a </tool_call> next (after whitespace) closes nothing: dropped
};

}  // namespace qinfer::server
