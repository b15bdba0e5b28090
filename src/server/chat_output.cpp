#include "server/chat_output.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "server/json_shape.h"
#include "server/xml_tool_call.h"

namespace qinfer::server {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kToolOpen = "<tool_call>", kToolClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=", kFunctionClose = "</function>";

// Python's whitespace (what vLLM's parsers strip), as xml_tool_call.cpp reads it.
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Length of the longest tail of `text` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

std::string_view trimmed_end(std::string_view text) {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// An XML call's function is still open (its </function> not yet written):
// a </tool_call> now is text of a value (code that mentions the tag), unless
// the next call follows it.
bool in_open_function(std::string_view body) {
  while (!body.empty() && is_space(body.front())) body.remove_prefix(1);
  return body.substr(0, 10) == "<function=" && !ends_with(trimmed_end(body), "</function>");
}

// The body of an XML call the reply ended in, when the model closed it: its
// function (with the </tool_call> cut short, or not begun), or the
// </tool_call> itself after a function left open. A reply cut short inside
// a value is no call.
std::optional<std::string_view> closed_at_the_end(std::string_view body) {
  body = trimmed_end(body);
  if (ends_with(body, kToolClose)) return body.substr(0, body.size() - kToolClose.size());
  body = trimmed_end(body.substr(0, body.size() - partial_tag(body, kToolClose)));
  if (ends_with(body, "</function>")) return body;
  return std::nullopt;
}

// Whether text is one JSON value (not too deep or large to parse).
bool is_json_text(const std::string& text) {
  return !json_shape_problem(text) && !nlohmann::json::parse(text, nullptr, false).is_discarded();
}

enum class Verdict { Undecided, Call, Text };

// A bare call's parameter begins within this many bytes, or it is text
// (whitespace without end after its header is read again with every piece).
constexpr size_t kMaxBareHeader = 4096;

// A bare call's beginning (Qwen3-Coder's <function=NAME> without the
// <tool_call> before it): a call where NAME is offered and a parameter or
// the function's end comes next; anything else is text, known as soon as it
// differs.
Verdict bare_call_header(std::string_view body, const nlohmann::ordered_json& tools) {
  const size_t end = body.find('>');
  if (end == std::string_view::npos) {
    const std::string_view begun = body.substr(kFunctionOpen.size());
    return begun.size() > 256 || (!begun.empty() && !is_function_name(begun)) ? Verdict::Text : Verdict::Undecided;
  }
  const std::string_view name = body.substr(kFunctionOpen.size(), end - kFunctionOpen.size());
  if (!is_function_name(name) || !offered_function(tools, name)) return Verdict::Text;
  size_t next = end + 1;
  while (next < body.size() && is_space(body[next])) ++next;
  if (next > kMaxBareHeader) return Verdict::Text;  // however the text was cut
  const std::string_view rest = body.substr(next);
  for (std::string_view tag : {std::string_view("<parameter="), kFunctionClose}) {
    const size_t n = std::min(rest.size(), tag.size());
    if (rest.substr(0, n) == tag.substr(0, n)) return n == tag.size() ? Verdict::Call : Verdict::Undecided;
  }
  return rest.empty() ? Verdict::Undecided : Verdict::Text;
}

}  // namespace

void ChatDelta::append(ChatDelta&& later) {
  reasoning += later.reasoning;
  for (ToolCall& call : later.tool_calls) {
    if (call.continuation && !tool_calls.empty()) {
      tool_calls.back().arguments += call.arguments;
      continue;
    }
    call.content_before += content.size();
    tool_calls.push_back(std::move(call));
  }
  content += later.content;
}

ChatOutputParser::ChatOutputParser(bool starts_in_reasoning, ToolCalls tool_calls,
                                   std::shared_ptr<const nlohmann::ordered_json> xml_tools)
    : mode_(starts_in_reasoning ? Mode::Reasoning : Mode::Content),
      allowed_(tool_calls),
      xml_tools_(std::move(xml_tools)),
      strip_leading_(starts_in_reasoning) {}

ChatDelta ChatOutputParser::push(std::string_view text) {
  ChatDelta out;
  open_entry_ = std::string::npos;
  held_ += text;
  for (;;) {
    std::array<std::string_view, 5> tags{};
    size_t n_tags = 0;
    if (mode_ == Mode::Content) {
      if (!seen_content_ && tool_calls_ == 0) tags[n_tags++] = kThinkOpen;
      if (allowed_ != ToolCalls::None) tags[n_tags++] = kToolOpen;
      if (allowed_ != ToolCalls::None && xml_tools_) tags[n_tags++] = kFunctionOpen;
      if (orphan_close_) tags[n_tags++] = kToolClose;
    } else {
      tags[n_tags++] = mode_ == Mode::Reasoning ? kThinkClose : kToolClose;
      // An XML call whose function was left open ends at </tool_call> only where the next call follows.
      if (mode_ == Mode::ToolCall && xml_tools_) tags[n_tags++] = kToolOpen;
      if (mode_ == Mode::ToolCall && bare_) tags[n_tags++] = kFunctionClose;
      // Before a bare call's header is read, another opener makes it text; after, one on a line of its own ends
      // its function (xml_tool_call.h), so the bare call, and opens the next if its header says so.
      if (mode_ == Mode::ToolCall && bare_) tags[n_tags++] = kFunctionOpen;
    }
    size_t at = std::string::npos;
    std::string_view tag;
    for (size_t i = 0; i < n_tags; ++i) {
      const size_t p = held_.find(tags[i]);
      // <think> opens reasoning only before the answer has begun.
      if (p != std::string::npos && tags[i] == kThinkOpen &&
          !std::all_of(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(p), is_space))
        continue;
      if (p < at) at = p, tag = tags[i];
    }
    if (at == std::string::npos) {
      size_t keep = 0;
      for (size_t i = 0; i < n_tags; ++i) keep = std::max(keep, partial_tag(held_, tags[i]));
      // Whitespace while a <think> may still open is held: before one, it is
      // no answer's (what vLLM's reasoning parser drops). Where it is
      // stripped anyway (after </think>), it goes now, with its token.
      if (mode_ == Mode::Content && !seen_content_ && tool_calls_ == 0 && !strip_leading_ &&
          std::all_of(held_.begin(), held_.end() - static_cast<std::ptrdiff_t>(keep), is_space))
        keep = held_.size();
      emit(std::string_view(held_).substr(0, held_.size() - keep), out);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    const Mode searched = mode_;
    if (tag != kThinkOpen) emit(std::string_view(held_).substr(0, at), out);  // only whitespace before <think>
    // A bare call's header turned out text, or an opener came before it was
    // read: the tag is read again as the answer's. A function on a line of
    // its own ends a bare call, and is read again as what may be the next.
    if (mode_ == Mode::ToolCall && bare_ && !bare_header_read_ && (tag == kFunctionOpen || tag == kToolOpen))
      bare_header_is_text(out);
    else if (mode_ == Mode::ToolCall && bare_ && tag == kFunctionOpen && ends_with(tool_text_, "\n"))
      close_tool_call(out, true);
    if (mode_ != searched) {
      held_.erase(0, at);
      continue;
    }
    held_.erase(0, at + tag.size());
    strip_leading_ = true;
    if (tag == kThinkOpen)
      mode_ = Mode::Reasoning;
    else if (tag == kThinkClose)
      mode_ = Mode::Content;
    else if (tag == kFunctionOpen && mode_ == Mode::ToolCall)
      take_tool_text(kFunctionOpen, out);  // text of a value: the header was read as it came
    else if (tag == kFunctionOpen)         // a bare call, unless its header says otherwise
      open_tool_call(), bare_ = true, take_tool_text(kFunctionOpen, out);
    else if (tag == kFunctionClose)
      close_bare_call(out);
    else if (tag == kToolClose && mode_ == Mode::Content && orphan_close_)
      orphan_close_ = false;  // the closing tag of a bare call
    else if (tag == kToolClose && mode_ == Mode::Content)
      strip_leading_ = false, emit(kToolClose, out);
    else if (tag == kToolOpen && mode_ == Mode::ToolCall && !ends_with(trimmed_end(tool_text_), kToolClose))
      take_tool_text(kToolOpen, out);  // text of a value
    else if (tag == kToolOpen && mode_ == Mode::ToolCall)
      close_tool_call(out, false), open_tool_call();  // that </tool_call> closed it
    else if (tag == kToolOpen)
      open_tool_call();
    else if (xml_tools_ && in_open_function(tool_text_))
      take_tool_text(kToolClose, out);
    else
      close_tool_call(out, true);
  }
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta out;
  open_entry_ = std::string::npos;
  emit(held_, out);  // a tag prefix that never completed is plain text
  held_.clear();
  if (mode_ == Mode::ToolCall) close_tool_call(out, false);
  return out;
}

void ChatOutputParser::emit(std::string_view text, ChatDelta& out) {
  if (text.empty()) return;
  if (mode_ == Mode::ToolCall) {
    take_tool_text(text, out);
    return;
  }
  if (strip_leading_) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    if (text.empty()) return;
    strip_leading_ = false;
  }
  if (mode_ == Mode::Reasoning) {
    out.reasoning += text;
  } else {
    out.content += text;
    // Whitespace alone does not begin the answer (a <think> may still follow), nor end a bare call's.
    if (!std::all_of(text.begin(), text.end(), is_space)) seen_content_ = true, orphan_close_ = false;
  }
}

void ChatOutputParser::open_tool_call() {
  mode_ = Mode::ToolCall;
  tool_text_.clear();
  json_call_ = JsonToolCallReader();
  xml_call_ = XmlToolCallReader(xml_tools_.get());
  call_sent_ = false;
  bare_ = bare_header_read_ = orphan_close_ = false;
}

// At its </function>, unless the header, now whole, makes it text.
void ChatOutputParser::close_bare_call(ChatDelta& out) {
  take_tool_text(kFunctionClose, out);
  if (mode_ == Mode::ToolCall) close_tool_call(out, true);
}

// A bare call's header that turns out to be text goes out as the answer's,
// at once (prose that mentions the tag is not held to the reply's end).
void ChatOutputParser::check_bare_header(ChatDelta& out) {
  if (!bare_ || bare_header_read_) return;
  const Verdict v = bare_call_header(tool_text_, *xml_tools_);
  if (v == Verdict::Call) bare_header_read_ = true;
  if (v == Verdict::Text) bare_header_is_text(out);
}

void ChatOutputParser::bare_header_is_text(ChatDelta& out) {
  mode_ = Mode::Content;
  bare_ = false;
  strip_leading_ = false;
  emit(std::exchange(tool_text_, {}), out);
}

// A call is announced once its name is read, and its arguments go out as
// they come: joined to the announcement when it is in the same delta.
void ChatOutputParser::take_tool_text(std::string_view text, ChatDelta& out) {
  tool_text_ += text;
  check_bare_header(out);
  if (mode_ != Mode::ToolCall) return;
  const bool undecided = json_call_.shape() == JsonToolCallReader::Shape::Undecided;
  const std::string arguments = json_call_.push(text);
  if (undecided && json_call_.shape() == JsonToolCallReader::Shape::Streamed) announce_call(json_call_.name(), out);
  send_arguments(arguments, out);
  if (xml_tools_) send_pieces(xml_call_.push(text), out);
}

void ChatOutputParser::announce_call(const std::string& name, ChatDelta& out) {
  call_sent_ = allowed_ == ToolCalls::Any || tool_calls_ == 0;
  ++tool_calls_;
  if (!call_sent_) return;
  open_entry_ = out.tool_calls.size();
  out.tool_calls.push_back({.name = name, .arguments = "", .content_before = out.content.size()});
}

void ChatOutputParser::send_arguments(std::string_view arguments, ChatDelta& out) {
  if (!call_sent_ || arguments.empty()) return;
  if (open_entry_ == std::string::npos) {
    open_entry_ = out.tool_calls.size();
    out.tool_calls.push_back({.name = "", .arguments = "", .content_before = 0, .continuation = true});
  }
  out.tool_calls[open_entry_].arguments += arguments;
}

void ChatOutputParser::send_pieces(std::vector<XmlToolCallReader::Piece> pieces, ChatDelta& out) {
  for (const XmlToolCallReader::Piece& piece : pieces) {
    if (!piece.name.empty()) announce_call(piece.name, out);
    send_arguments(piece.arguments, out);
  }
}

// A streamed call was announced and its arguments sent: one the model left
// unfinished or malformed keeps what was sent, but ends no reply for its
// calls. Otherwise a body {"name": string, "arguments": ...} becomes a call,
// and anything else stays text the user sees, tags included.
void ChatOutputParser::close_tool_call(ChatDelta& out, bool terminated) {
  mode_ = Mode::Content;
  bool well_formed = false;
  if (xml_tools_ && xml_call_.shape() != XmlToolCallReader::Shape::Other) {
    if (const auto body = terminated ? std::optional<std::string_view>(tool_text_) : closed_at_the_end(tool_text_)) {
      send_pieces(xml_call_.finish(body->size()), out);
      well_formed = xml_call_.read_whole() && !parse_xml_tool_calls(*body, *xml_tools_).empty();
    }
  }
  // Arguments nested too deep to print, or too large to parse, leave the call as text. A streamed XML call's
  // body is no JSON, nor is a bare call's: not parsed.
  const bool xml_streamed = xml_call_.shape() == XmlToolCallReader::Shape::Streamed;
  const auto j = xml_streamed || bare_ || json_shape_problem(tool_text_)
                     ? nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded)
                     : nlohmann::ordered_json::parse(tool_text_, nullptr, false);
  const bool json_call = !j.is_discarded() && j.is_object() && j.contains("name") && j["name"].is_string();
  if (json_call_.shape() == JsonToolCallReader::Shape::Streamed || xml_streamed) {
    well_formed_calls_ += well_formed || json_call;
    ++calls_closed_;
    strip_leading_ = true;  // the whitespace between calls is not content
    orphan_close_ = bare_;  // Qwen3-Coder still writes the closing tag it did not open
    // What the XML reader stopped at is no call's: it stays text the user sees.
    if (const size_t unread = xml_call_.unread_from(); unread < tool_text_.size()) {
      strip_leading_ = orphan_close_ = false;
      emit(tool_text_.substr(unread) + (terminated && !bare_ ? std::string(kToolClose) : ""), out);
    }
  } else if (json_call) {
    ToolCall call{j["name"].get<std::string>(), "{}"};
    // Qwen models sometimes write "parameters" (the tool's schema's name) for
    // the arguments: SGLang's Qwen parser reads them, where vLLM's keeps the
    // text. Arguments are JSON text to the client: a string that is one is
    // taken as such, any other string becomes a JSON string, as vLLM dumps it.
    const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
    if (key != nullptr) {
      const auto& args = j[key];
      call.arguments =
          args.is_string() && is_json_text(args.get_ref<const std::string&>()) ? args.get<std::string>() : args.dump();
    }
    call.content_before = out.content.size();
    if (allowed_ == ToolCalls::Any || tool_calls_ == 0) out.tool_calls.push_back(std::move(call));
    ++tool_calls_;
    ++well_formed_calls_;
    ++calls_closed_;
    strip_leading_ = true;
  } else {
    strip_leading_ = false;
    emit(bare_ ? tool_text_ : std::string(kToolOpen) + tool_text_ + (terminated ? std::string(kToolClose) : ""), out);
  }
  bare_ = false;
  tool_text_.clear();
}

}  // namespace qinfer::server
