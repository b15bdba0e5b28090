#include "runtime/conversation.h"

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
  // As apply_chat_template(tokenize=True): the rendered text is encoded with special tokens recognised.
  return tokenizer_.encode(render_prompt());
}

void Conversation::assistant_reply(const std::string& text) {
  messages_.push_back({{"role", "assistant"}, {"content", text}});
}

void Conversation::drop_last_user_turn() {
  if (!messages_.empty() && messages_.back()["role"] == "user") messages_.erase(messages_.size() - 1);
}

std::vector<ThinkSplitter::Part> ThinkSplitter::push(std::string_view piece) {
  std::vector<Part> parts;
  while (!piece.empty()) {
    const std::string_view tag = thinking_ ? "</think>" : "<think>";
    const size_t at = piece.find(tag);
    if (at == std::string_view::npos) {
      parts.push_back({std::string(piece), thinking_});
      break;
    }
    if (at > 0) parts.push_back({std::string(piece.substr(0, at)), thinking_});
    // The tags themselves belong to the reasoning.
    parts.push_back({std::string(tag), true});
    thinking_ = !thinking_;
    piece.remove_prefix(at + tag.size());
  }
  return parts;
}

}  // namespace qinfer
