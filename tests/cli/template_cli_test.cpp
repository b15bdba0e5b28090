// `qinfer template` through the built binary: a conversation on stdin, the
// prompt transformers renders on stdout, byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

using nlohmann::ordered_json;
using qinfer::test::data_path;
using qinfer::test::run_command;

namespace {

ordered_json chat_cases() {
  std::ifstream in(data_path("chat_template/cases.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ordered_json::parse(ss.str());
}

// Runs `qinfer template -m model` with `request` written to a file piped to stdin.
qinfer::test::CommandResult run_template(const std::string& model, const std::string& request,
                                         const std::string& redirect = "") {
  qinfer::test::ScratchDir dir("template-cli");
  std::ofstream(dir.file("request.json")) << request;
  return run_command(qinfer::test::qinfer_binary() + " template -m " + model + " < " + dir.file("request.json") +
                     redirect);
}

ordered_json request_of(const ordered_json& c) {
  ordered_json request = {{"messages", c["messages"]}, {"add_generation_prompt", c["add_generation_prompt"]}};
  if (!c["tools"].is_null()) request["tools"] = c["tools"];
  if (!c["enable_thinking"].is_null()) request["enable_thinking"] = c["enable_thinking"];
  return request;
}

}  // namespace

TEST(TemplateCli, PrintsExactlyWhatTransformersRenders) {
  const ordered_json cases = chat_cases();
  // Plain chat, tools with unicode and number formatting, enable_thinking=false.
  for (const char* name : {"system + user", "tojson number formatting (Python float repr, int vs float kept)",
                           "tools with unicode / html / escapes in schema (tojson)",
                           "tool calls, enable_thinking=false", "unicode and CRLF content"}) {
    SCOPED_TRACE(name);
    const ordered_json* found = nullptr;
    for (const auto& c : cases)
      if (c["name"] == name) found = &c;
    ASSERT_NE(found, nullptr);
    const auto r = run_template(data_path("models/tiny"), request_of(*found).dump());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, (*found)["rendered"].get<std::string>());
  }
}

TEST(TemplateCli, ExtraMembersBecomeTemplateVariables) {
  qinfer::test::ScratchDir dir("template-vars");
  std::ofstream(dir.file("tokenizer_config.json"))
      << R"({"chat_template": "{{ bos_token }}{{ greeting }} {{ messages[0].content }}", "bos_token": "<s>"})";
  const auto r = run_template(dir.path(), R"({"messages": [{"role": "user", "content": "x"}], "greeting": "hi"})");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "<s>hi x");
}

// A hunt finding: a server request's chat_template_kwargs became one variable of that name, and its
// enable_thinking was silently not applied. Its entries are the template's variables, as the server passes them.
TEST(TemplateCli, ChatTemplateKwargsAreTheTemplatesVariables) {
  const ordered_json cases = chat_cases();
  for (const auto& c : cases) {
    if (c["name"] != "tool calls, enable_thinking=false") continue;
    ordered_json request = request_of(c);
    request.erase("enable_thinking");
    request["chat_template_kwargs"] = {{"enable_thinking", false}};
    const auto r = run_template(data_path("models/tiny"), request.dump());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, c["rendered"].get<std::string>());
    request["chat_template_kwargs"] = {{"messages", ordered_json::array()}};
    const auto refused = run_template(data_path("models/tiny"), request.dump(), " 2>&1");
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.output.find("'chat_template_kwargs' may not set 'messages'"), std::string::npos)
        << refused.output;
    // The review's: a null enable_thinking at the top level and false in the kwargs is false, as the server reads it.
    request["enable_thinking"] = nullptr;
    request["chat_template_kwargs"] = {{"enable_thinking", false}};
    const auto both = run_template(data_path("models/tiny"), request.dump());
    ASSERT_EQ(both.exit_code, 0) << both.output;
    EXPECT_EQ(both.output, c["rendered"].get<std::string>());
    return;
  }
  FAIL() << "no such case";
}

TEST(TemplateCli, ChatTemplateJinjaFileTakesPrecedence) {
  qinfer::test::ScratchDir dir("template-jinja");
  std::ofstream(dir.file("tokenizer_config.json")) << R"({"chat_template": "from config", "eos_token": "</s>"})";
  std::ofstream(dir.file("chat_template.jinja")) << "from file {{ eos_token }}\n";
  const auto r = run_template(dir.path(), R"({"messages": []})");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "from file </s>");
}

TEST(TemplateCli, ChatTemplateFlagReplacesTheCheckpointsWithItsSpecialTokens) {
  qinfer::test::ScratchDir dir("template-flag");
  std::ofstream(dir.file("tokenizer_config.json")) << R"({"chat_template": "from config", "eos_token": "</s>"})";
  std::ofstream(dir.file("chat_template.jinja")) << "from the checkpoint's file";
  std::ofstream(dir.file("request.json")) << R"({"messages": [{"role": "user", "content": "x"}]})";
  std::ofstream(dir.file("fixed.jinja")) << "fixed: {{ messages[0].content }}{{ eos_token }}";
  const auto run = [&](const std::string& flag) {
    return run_command(qinfer::test::qinfer_binary() + " template -m " + dir.path() + " " + flag + " < " +
                       dir.file("request.json") + " 2>&1");
  };
  auto r = run("--chat-template " + dir.file("fixed.jinja"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "fixed: x</s>");
  r = run("--chat-template 'inline {{ messages | length }}'");  // a value with a brace that names no file
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "inline 1");

  // The flag's value at fault exits 2 (usage), a file's content 1, as other files flags name.
  auto fails = [&](int code, const std::string& flag, const std::string& message) {
    const auto e = run(flag);
    EXPECT_EQ(e.exit_code, code) << flag;
    EXPECT_NE(e.output.find(message), std::string::npos) << e.output;
  };
  fails(2, "--chat-template " + dir.file("missing.jinja"), "missing.jinja: no such file");
  fails(2, "--chat-template ''", "--chat-template is empty");
  fails(2, "--chat-template '{% for %}'", "--chat-template: chat template:1:");
  std::ofstream(dir.file("empty.jinja")).flush();
  fails(1, "--chat-template " + dir.file("empty.jinja"), "empty.jinja: the template is empty");
  std::ofstream(dir.file("bad.jinja")) << "{{ x";
  fails(1, "--chat-template " + dir.file("bad.jinja"), "bad.jinja: chat template:1:");
  std::ofstream(dir.file("latin1.jinja")) << "caf\xe9";
  fails(1, "--chat-template " + dir.file("latin1.jinja"), "UTF-8");
  fails(1, "--chat-template " + dir.path(), "--chat-template: ");                     // a directory
  fails(2, "--default-chat-template-kwargs '{}'", "--default-chat-template-kwargs");  // serving commands' only
}

TEST(TemplateCli, BadInputFailsWithAMessage) {
  const std::string model = data_path("models/tiny");
  auto fails_with = [&](const std::string& request, const std::string& message) {
    const auto r = run_template(model, request, " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << request;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  };
  fails_with("not json", "stdin is not valid JSON");
  fails_with("[]", "stdin must be a JSON object");
  fails_with(R"({"messages": [{"role": "user", "content": "hi", "x": )" + std::string(100000, '[') +
                 std::string(100000, ']') + "}]}",
             "stdin is nested deeper than 128 levels");  // a hunt finding: 10^6 levels overflowed the stack
  fails_with("{}", "missing \"messages\"");
  fails_with(R"({"messages": {}})", "\"messages\" must be an array");
  fails_with(R"({"messages": [], "tools": 1})", "\"tools\" must be an array or null");
  fails_with(R"({"messages": [], "add_generation_prompt": "yes"})", "\"add_generation_prompt\" must be true or false");
  // The Qwen3 template reads messages[0].role: an empty conversation is a template error with its position.
  fails_with(R"({"messages": []})", "chat template (");

  qinfer::test::ScratchDir empty("template-empty");
  const auto r = run_template(empty.path(), R"({"messages": []})", " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("tokenizer_config.json"), std::string::npos) << r.output;
}

TEST(TemplateCli, HelpSaysWhatItDoes) {
  const auto r = run_command(qinfer::test::qinfer_binary() + " template --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("chat template"), std::string::npos) << r.output;
}
