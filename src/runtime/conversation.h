// A multi-turn chat: the message history rendered through the model's chat
// template into the prompt ids of the next turn. The assistant's replies are
// kept as generated (reasoning included): the Qwen3 template itself drops the
// reasoning of earlier turns, as the model was trained to see them.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/chat_template.h"
#include "text/tokenizer.h"

namespace qinfer {

class Conversation {
 public:
  // enable_thinking: nullopt leaves the template's default (Qwen3: thinking on).
  Conversation(const ChatTemplate& tmpl, const Tokenizer& tok, std::string system_prompt,
               std::optional<bool> enable_thinking);

  // Adds the user's message and returns the prompt ids for the assistant's
  // reply; Error, and the message not added, when the template refuses it.
  std::vector<int32_t> user_turn(const std::string& text);
  void assistant_reply(const std::string& text);
  // Drops the last user message when its reply was abandoned (error, context full).
  void drop_last_user_turn();
  void reset();

  const nlohmann::ordered_json& messages() const { return messages_; }
  std::string render_prompt() const;

 private:
  const ChatTemplate& template_;
  const Tokenizer& tokenizer_;
  std::string system_prompt_;
  std::optional<bool> enable_thinking_;
  nlohmann::ordered_json messages_;
};

// Splits streamed reply text into reasoning (inside <think>...</think>, the
// tags and the whitespace after </think> included) and answer, so a frontend
// can dim or hide the reasoning. A tag may arrive in pieces: a tail that may
// begin one is held until the next push(), or finish().
class ThinkSplitter {
 public:
  struct Part {
    std::string text;
    bool thinking;
  };
  std::vector<Part> push(std::string_view piece);
  std::vector<Part> finish();  // what is still held: the reply ended

 private:
  bool thinking_ = false;
  bool separating_ = false;  // right after </think>
  std::string held_;
};

}  // namespace qinfer
