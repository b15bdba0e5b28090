// vLLM's --chat-template and --default-chat-template-kwargs, for the
// commands that render conversations: a template in place of the
// checkpoint's (a fixed or custom one, without editing the downloaded
// files), and template variables every conversation gets unless it sets its
// own, e.g. {"enable_thinking": false} to turn Qwen3's thinking off for a
// whole server.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/model_bundle.h"

namespace qinfer::cli {

struct ChatTemplateFlags {
  std::optional<std::string> chat_template;   // a file's path, or the template's text
  std::optional<std::string> default_kwargs;  // a JSON object

  void add_options(CLI::App* cmd, bool with_default_kwargs);
  // Reads the template and the kwargs and checks them, before the model
  // loads: an error naming the flag (a template that does not compile, a
  // file that cannot be read, kwargs that are no JSON object or that a
  // request could not give).
  void read();
  // What read() took, into the loaded model's bundle.
  void apply(ModelBundle& bundle) const;
  // The template read, or nullptr.
  const std::string* source() const { return source_ ? &*source_ : nullptr; }
  std::string source_name() const;

 private:
  std::optional<std::string> source_;
  bool from_file_ = false;  // --chat-template named a file
  nlohmann::ordered_json kwargs_ = nlohmann::ordered_json::object();
};

}  // namespace qinfer::cli
