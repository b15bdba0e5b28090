#include "text/jinja/chat_template.h"

#include <algorithm>

#include "util/error.h"
#include "util/json_error.h"
#include "util/mapped_file.h"

namespace qinfer {

namespace {

// A special token is a string or an AddedToken object {"content": ..., ...}.
std::optional<std::string> token_text(const nlohmann::ordered_json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  fail(where, " must be a string or an object with a string \"content\"");
}

nlohmann::ordered_json read_config(const std::string& path) {
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(path, " is not valid JSON (", json_error_text(e), ")");
  }
  if (!config.is_object()) fail(path, ": expected a JSON object");
  return config;
}

std::shared_ptr<const jinja::Template> compile(const std::string& source, const std::string& name) {
  return std::make_shared<const jinja::Template>(source, name);
}

// transformers passes special_tokens_map: the tokens that are set.
std::vector<std::pair<std::string, jinja::Value>> special_tokens_of(const nlohmann::ordered_json& config,
                                                                    const std::string& path) {
  std::vector<std::pair<std::string, jinja::Value>> special_tokens;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!config.contains(key)) continue;
    if (auto text = token_text(config[key], path + ": " + key)) special_tokens.emplace_back(key, jinja::Value(*text));
  }
  if (config.contains("additional_special_tokens")) {
    const auto& extra = config["additional_special_tokens"];
    if (!extra.is_array()) fail(path, ": additional_special_tokens must be a list");
    std::vector<jinja::Value> tokens;
    for (size_t i = 0; i < extra.size(); ++i)
      if (auto text = token_text(extra[i], path + ": additional_special_tokens[" + std::to_string(i) + "]"))
        tokens.emplace_back(*text);
    if (!tokens.empty())
      special_tokens.emplace_back("additional_special_tokens", jinja::Value::list(std::move(tokens)));
  }
  return special_tokens;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
    : default_(compile(source, "chat template")) {
  if (!bos_token.empty()) special_tokens_.emplace_back("bos_token", jinja::Value(std::move(bos_token)));
  if (!eos_token.empty()) special_tokens_.emplace_back("eos_token", jinja::Value(std::move(eos_token)));
}

ChatTemplate::ChatTemplate(std::shared_ptr<const jinja::Template> default_template,
                           std::shared_ptr<const jinja::Template> tool_use_template,
                           std::vector<std::pair<std::string, jinja::Value>> special_tokens)
    : default_(std::move(default_template)),
      tool_use_(std::move(tool_use_template)),
      special_tokens_(std::move(special_tokens)) {}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& path) { return load(path, nullptr); }

ChatTemplate ChatTemplate::from_model_dir(const std::string& model_dir) {
  std::string config = model_dir + "/tokenizer_config.json";
  std::string jinja = model_dir + "/chat_template.jinja";
  if (!file_exists(config)) fail(config, ": not found (the model directory needs a tokenizer_config.json)");
  return file_exists(jinja) ? load(config, &jinja) : load(config, nullptr);
}

ChatTemplate ChatTemplate::replacing(const std::string& model_dir, const std::string& source, const std::string& name) {
  const std::string config = model_dir + "/tokenizer_config.json";
  return ChatTemplate(compile(source, "chat template (" + name + ")"), nullptr,
                      file_exists(config) ? special_tokens_of(read_config(config), config)
                                          : std::vector<std::pair<std::string, jinja::Value>>{});
}

ChatTemplate ChatTemplate::load(const std::string& path, const std::string* jinja_path) {
  const nlohmann::ordered_json config = read_config(path);
  std::shared_ptr<const jinja::Template> default_template, tool_use_template;
  nlohmann::ordered_json field = config.contains("chat_template") ? config["chat_template"] : nlohmann::ordered_json();
  if (jinja_path) {
    default_template = compile(read_text_file(*jinja_path), "chat template (" + *jinja_path + ")");
  } else if (field.is_null()) {
    fail(path, ": no \"chat_template\" field (this model has no chat template)");
  } else if (field.is_string()) {
    default_template = compile(field.get<std::string>(), "chat template (" + path + ")");
  } else if (field.is_array()) {
    for (size_t i = 0; i < field.size(); ++i) {
      const auto& entry = field[i];
      std::string where = path + ": chat_template[" + std::to_string(i) + "]";
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
          !entry["template"].is_string())
        fail(where, " must be an object with string \"name\" and \"template\"");
      std::string name = entry["name"].get<std::string>();
      auto compiled = compile(entry["template"].get<std::string>(), "chat template '" + name + "' (" + path + ")");
      if (name == "default") default_template = compiled;
      if (name == "tool_use") tool_use_template = compiled;
    }
    if (!default_template) fail(path, ": chat_template has no template named \"default\"");
  } else {
    fail(path, ": \"chat_template\" must be a string or a list of {name, template}");
  }

  return ChatTemplate(std::move(default_template), std::move(tool_use_template), special_tokens_of(config, path));
}

std::string ChatTemplate::render(const ChatTemplateInput& in) const {
  if (!in.messages.is_array())
    fail("chat template input: \"messages\" must be an array, got ", in.messages.type_name());
  if (!in.tools.is_null() && !in.tools.is_array())
    fail("chat template input: \"tools\" must be an array or null, got ", in.tools.type_name());
  std::vector<std::pair<std::string, jinja::Value>> variables = special_tokens_;
  variables.emplace_back("messages", jinja::from_json(in.messages));
  variables.emplace_back("tools", jinja::from_json(in.tools));
  variables.emplace_back("documents", jinja::Value(jinja::None{}));
  variables.emplace_back("add_generation_prompt", jinja::Value(in.add_generation_prompt));
  if (in.enable_thinking) variables.emplace_back("enable_thinking", jinja::Value(*in.enable_thinking));
  if (!in.extra_variables.is_object())
    fail("chat template input: extra variables must be an object, got ", in.extra_variables.type_name());
  for (const auto& item : in.extra_variables.items()) {
    const std::string& name = item.key();  // not a structured binding: the lambda captures it (clang 14)
    auto same_name = [&](const auto& v) { return v.first == name; };
    variables.erase(std::remove_if(variables.begin(), variables.end(), same_name), variables.end());
    variables.emplace_back(name, jinja::from_json(item.value()));
  }
  const jinja::Template& t = (!in.tools.is_null() && tool_use_) ? *tool_use_ : *default_;
  return t.render(variables);
}

const std::string& ChatTemplate::text(bool with_tools) const {
  return (with_tools && tool_use_ ? *tool_use_ : *default_).text();
}

}  // namespace qinfer
