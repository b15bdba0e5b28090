#include "runtime/conversation.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer {

Conversation::Conversation(const ChatTemplate& tmpl, const Tokenizer& tok, std::string system_prompt,
                           std::optional<bool> enable_thinking)
    : template_(tmpl), tokenizer_(tok), system_prompt_(std::move(system_prompt)), enable_thinking_(enable_thinking) {
  reset();
}

void Conversation::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!system_prompt_.empty()) messages_.push_back({{"role", "system"}, {"content", system_prompt_}});
}

std::string Conversation::render_prompt() const {
  ChatTemplateInput in;
  in.messages = messages_;
  in.add_generation_prompt = true;
  in.enable_thinking = enable_thinking_;
  return template_.render(in);
}

std::vector<int32_t> Conversation::user_turn(const std::string& text) {
  messages_.push_back({{"role", "user"}, {"content", text}});
  try {
    // As apply_chat_template(tokenize=True): the rendered text is encoded with special tokens recognised.
    return tokenizer_.encode(render_prompt());
  } catch (...) {
    messages_.erase(messages_.size() - 1);  // a message the template refuses is not part of the chat
    throw;
  }
}

void Conversation::assistant_reply(const std::string& text) {
  messages_.push_back({{"role", "assistant"}, {"content", text}});
}

void Conversation::drop_last_user_turn() {
  if (!messages_.empty() && messages_.back()["role"] == "user") messages_.erase(messages_.size() - 1);
}

std::vector<ThinkSplitter::Part> ThinkSplitter::push(std::string_view piece) {
  std::vector<Part> parts;
  held_ += piece;
  std::string_view rest = held_;
  while (!rest.empty()) {
    if (separating_) {  // the whitespace after </think> separates reasoning from answer: it goes with the reasoning
      const size_t n = std::min(rest.find_first_not_of(" \t\r\n"), rest.size());
      if (n > 0) parts.push_back({std::string(rest.substr(0, n)), true});
      rest.remove_prefix(n);
      if (rest.empty()) break;  // more may follow
      separating_ = false;
    }
    const std::string_view tag = thinking_ ? "</think>" : "<think>";
    const size_t at = rest.find(tag);
    if (at == std::string_view::npos) {
      // A tail that may be the start of the tag waits for the next piece.
      size_t keep = std::min(rest.size(), tag.size() - 1);
      while (keep > 0 && rest.substr(rest.size() - keep) != tag.substr(0, keep)) --keep;
      if (rest.size() > keep) parts.push_back({std::string(rest.substr(0, rest.size() - keep)), thinking_});
      rest.remove_prefix(rest.size() - keep);
      break;
    }
    if (at > 0) parts.push_back({std::string(rest.substr(0, at)), thinking_});
    // The tags themselves belong to the reasoning.
    parts.push_back({std::string(tag), true});
    thinking_ = !thinking_;
    separating_ = !thinking_;
    rest.remove_prefix(at + tag.size());
  }
  held_ = std::string(rest);
  return parts;
}

std::vector<ThinkSplitter::Part> ThinkSplitter::finish() {
  std::vector<Part> parts;
  if (!held_.empty()) parts.push_back({std::move(held_), thinking_});
  held_.clear();
  return parts;
}

}  // namespace qinfer
