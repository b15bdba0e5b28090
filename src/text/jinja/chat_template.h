// A model's chat template (tokenizer_config.json "chat_template"), rendered
// byte for byte as transformers' apply_chat_template does: the template sees
// messages, tools, documents (None), add_generation_prompt, the special
// tokens (bos_token, eos_token, ...) and, when given, enable_thinking.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/template.h"

namespace qinfer {

struct ChatTemplateInput {
  // ordered_json keeps the key order of tool schemas and arguments, which
  // `tojson` prints; a plain nlohmann::json converts implicitly (sorted keys).
  nlohmann::ordered_json messages;  // array of {role, content, ...}
  nlohmann::ordered_json tools;     // null = not passed
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;  // nullopt = not passed
  // Further keyword arguments of apply_chat_template (e.g. "documents",
  // "date_string"): an object whose members become template variables.
  nlohmann::ordered_json extra_variables = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Reads "chat_template" (a string, or a list of {name, template}: "default",
  // and "tool_use" when tools are passed, as transformers picks) and the
  // special tokens. Throws Error naming the file and field at fault.
  static ChatTemplate from_tokenizer_config(const std::string& tokenizer_config_json_path);
  // A checkpoint directory: tokenizer_config.json, with chat_template.jinja
  // taking precedence over its "chat_template" when present (as transformers loads it).
  static ChatTemplate from_model_dir(const std::string& model_dir);
  // `source` in place of the model's template (apply_chat_template's
  // chat_template argument), with the special tokens of model_dir's
  // tokenizer_config.json (none without one). `name` says where it came from
  // in errors.
  static ChatTemplate replacing(const std::string& model_dir, const std::string& source, const std::string& name);

  // Empty bos/eos: the template sees them undefined (as transformers does for None).
  explicit ChatTemplate(std::string source, std::string bos_token = "", std::string eos_token = "");

  // Throws Error on bad input or template errors (naming line:column).
  std::string render(const ChatTemplateInput& in) const;
  // The source of the template that renders a conversation with (or
  // without) tools: what the model was taught to write, e.g. its tool calls.
  const std::string& text(bool with_tools) const;

 private:
  static ChatTemplate load(const std::string& config_path, const std::string* jinja_path);
  ChatTemplate(std::shared_ptr<const jinja::Template> default_template,
               std::shared_ptr<const jinja::Template> tool_use_template,
               std::vector<std::pair<std::string, jinja::Value>> special_tokens);

  std::shared_ptr<const jinja::Template> default_;
  std::shared_ptr<const jinja::Template> tool_use_;  // may be null
  std::vector<std::pair<std::string, jinja::Value>> special_tokens_;
};

}  // namespace qinfer
