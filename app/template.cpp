// qinfer template: the model's chat template on its own. Reads one JSON
// object from stdin — {"messages": [...], "tools": [...],
// "add_generation_prompt": true, "enable_thinking": false, ...} — and prints
// the prompt text exactly as transformers' apply_chat_template renders it,
// with nothing added. Other members are passed to the template as variables,
// as apply_chat_template passes its extra keyword arguments.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "chat_template_flags.h"
#include "commands.h"
#include "io/model_dir.h"
#include "server/openai_request.h"
#include "standard_input.h"
#include "text/jinja/chat_template.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

using nlohmann::ordered_json;

ChatTemplateInput parse_input(const std::string& text) {
  const ordered_json request = server::parse_json_body(text, "stdin");  // at most 128 levels deep: values are copied
  if (!request.contains("messages")) fail("stdin: missing \"messages\"");
  ChatTemplateInput in;
  for (auto& [key, value] : request.items()) {
    if (key == "chat_template_kwargs") continue;  // below
    if (key == "messages") {
      if (!value.is_array()) fail("stdin: \"messages\" must be an array");
      in.messages = value;
    } else if (key == "tools") {
      if (!value.is_null() && !value.is_array()) fail("stdin: \"tools\" must be an array or null");
      in.tools = value;
    } else if (key == "add_generation_prompt") {
      if (!value.is_boolean()) fail("stdin: \"add_generation_prompt\" must be true or false");
      in.add_generation_prompt = value.get<bool>();
    } else if (key == "enable_thinking") {
      if (!value.is_null() && !value.is_boolean()) fail("stdin: \"enable_thinking\" must be true, false or null");
      if (value.is_boolean()) in.enable_thinking = value.get<bool>();
      if (value.is_null()) in.extra_variables[key] = nullptr;  // None, as apply_chat_template passes it
    } else {
      in.extra_variables[key] = value;
    }
  }
  // A server request's kwargs, read as the server reads them (a hunt finding: they became one variable of that
  // name, and enable_thinking in them was silently not applied).
  if (const auto kwargs = request.find("chat_template_kwargs"); kwargs != request.end()) {
    if (!kwargs->is_object()) fail("stdin: \"chat_template_kwargs\" must be an object");
    try {
      server::read_chat_template_kwargs(*kwargs, in);
    } catch (const Error& e) {
      fail("stdin: ", e.what());
    }
  }
  return in;
}

}  // namespace

void add_template_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto flags = std::make_shared<ChatTemplateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "template",
      "Render the model's chat template for a conversation given on stdin as JSON "
      "{\"messages\": [...], \"tools\": [...], \"add_generation_prompt\": true, \"enable_thinking\": false} "
      "(other keys, and those of a \"chat_template_kwargs\" object, are template variables) "
      "and print the prompt text exactly as transformers' apply_chat_template would (nothing added)");
  cmd->add_option(
         "-m,--model", *model,
         "Model directory with tokenizer_config.json (and chat_template.jinja, if any), or a Hugging Face hub id")
      ->required();
  flags->add_options(cmd, /*with_default_kwargs=*/false);
  cmd->callback([model, flags] {
    flags->read();
    const std::string dir = resolve_model_dir(*model);
    const ChatTemplate chat_template = flags->source()
                                           ? ChatTemplate::replacing(dir, *flags->source(), flags->source_name())
                                           : ChatTemplate::from_model_dir(dir);
    require_readable_stdin();
    std::string request(std::istreambuf_iterator<char>(std::cin), {});
    require_stdin_read_without_error();
    std::string prompt = chat_template.render(parse_input(request));
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  });
}

}  // namespace qinfer::cli
