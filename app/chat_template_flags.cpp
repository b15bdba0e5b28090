#include "chat_template_flags.h"

#include <filesystem>
#include <system_error>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "text/jinja/chat_template.h"
#include "text_file_flag.h"
#include "usage_error.h"
#include "util/utf8.h"

namespace qinfer::cli {

namespace {

// vLLM's rule: a path that names a file is read; otherwise a value with a
// brace or a line break is the template itself, and anything else a path
// that is not there.
bool names_a_file(const std::string& value) {
  std::error_code ec;
  return std::filesystem::exists(value, ec);
}

bool looks_like_a_template(const std::string& value) { return value.find_first_of("{}\n") != std::string::npos; }

}  // namespace

void ChatTemplateFlags::add_options(CLI::App* cmd, bool with_default_kwargs) {
  cmd->add_option("--chat-template", chat_template,
                  "A chat template to use instead of the checkpoint's: a file's path, or the template itself (a "
                  "value with '{', '}' or a line break that names no file), as vLLM's flag");
  if (with_default_kwargs)
    cmd->add_option("--default-chat-template-kwargs", default_kwargs,
                    "A JSON object of template variables every conversation gets unless its request's "
                    "chat_template_kwargs sets them (vLLM's flag), e.g. '{\"enable_thinking\": false}'");
}

std::string ChatTemplateFlags::source_name() const {
  return from_file_ ? "--chat-template " + *chat_template : "--chat-template";
}

void ChatTemplateFlags::read() {
  if (chat_template) {
    const std::string& value = *chat_template;
    if (value.empty()) usage_fail("--chat-template is empty: give a template file's path, or the template");
    from_file_ = names_a_file(value);
    if (!from_file_ && !looks_like_a_template(value))
      usage_fail("--chat-template ", value, ": no such file (nor a template: it has no '{', '}' or line break)");
    source_ = from_file_ ? read_named_file("--chat-template", value) : value;
    // A file's content is a failure while running (exit 1), as other files the flags name; the value itself a
    // usage error.
    const auto refuse = [&](const std::string& why) {
      if (from_file_) fail(source_name(), ": ", why);
      usage_fail(source_name(), ": ", why);
    };
    if (source_->empty()) refuse("the template is empty");
    try {
      utf8::require_valid(*source_, "the template");
      static_cast<void>(ChatTemplate(*source_));  // compiled again with the model's special tokens once loaded
    } catch (const Error& e) {
      refuse(e.what());
    }
  }
  if (default_kwargs) {
    const auto j = nlohmann::ordered_json::parse(*default_kwargs, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      usage_fail("--default-chat-template-kwargs ", *default_kwargs, ": not a JSON object");
    try {
      ChatTemplateInput scratch;
      server::read_chat_template_kwargs(j, scratch);
    } catch (const server::ApiError& e) {
      usage_fail("--default-chat-template-kwargs: ", e.what());
    }
    kwargs_ = j;
  }
}

void ChatTemplateFlags::apply(ModelBundle& bundle) const {
  if (source_) bundle.replace_chat_template(*source_, source_name());
  bundle.default_chat_template_kwargs = kwargs_;
}

}  // namespace qinfer::cli
