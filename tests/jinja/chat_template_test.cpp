// The Qwen3 chat template against the 47 renderings transformers produced
// (tests/data/chat_template/cases.json), and ChatTemplate's handling of
// tokenizer_config.json and its input.
#include "text/jinja/chat_template.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "util/error.h"

namespace qinfer {
namespace {

const std::string kConfig = QINFER_TEST_DATA "/tokenizer_config.json";

nlohmann::ordered_json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

ChatTemplateInput input_of(const nlohmann::ordered_json& c) {
  ChatTemplateInput in;
  in.messages = c["messages"];
  in.tools = c["tools"];
  in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  if (!c["enable_thinking"].is_null()) in.enable_thinking = c["enable_thinking"].get<bool>();
  return in;
}

TEST(ChatTemplate, AllQwen3CasesRenderExactly) {
  ChatTemplate t = ChatTemplate::from_tokenizer_config(kConfig);
  nlohmann::ordered_json cases = read_json(QINFER_TEST_DATA "/chat_template/cases.json");
  ASSERT_EQ(cases.size(), 47u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    EXPECT_EQ(t.render(input_of(c)), c["rendered"].get<std::string>());
  }
}

// The template string given directly behaves like the one read from the file.
TEST(ChatTemplate, ConstructedFromSourceMatchesConfig) {
  nlohmann::ordered_json config = read_json(kConfig);
  ChatTemplate t(config["chat_template"].get<std::string>(), "", "<|im_end|>");
  nlohmann::ordered_json cases = read_json(QINFER_TEST_DATA "/chat_template/cases.json");
  EXPECT_EQ(t.render(input_of(cases[0])), cases[0]["rendered"].get<std::string>());
}

TEST(ChatTemplate, SpecialTokensAreVariables) {
  ChatTemplate t("{{ bos_token }}|{{ eos_token }}|{{ bos_token is defined }}", "<s>", "</s>");
  EXPECT_EQ(t.render({nlohmann::ordered_json::array(), nullptr, false, std::nullopt}), "<s>|</s>|True");
  ChatTemplate no_bos("{{ bos_token is defined }}{{ eos_token }}");
  EXPECT_EQ(no_bos.render({nlohmann::ordered_json::array(), nullptr, false, std::nullopt}), "False");
}

// transformers passes tools=None and documents=None, and enable_thinking only when given.
TEST(ChatTemplate, VariablesTransformersPasses) {
  ChatTemplate t(
      "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ enable_thinking is defined }} "
      "{{ messages | length }}");
  ChatTemplateInput in{nlohmann::ordered_json::parse(R"([{"role": "user", "content": "x"}])"), nullptr, true,
                       std::nullopt};
  EXPECT_EQ(t.render(in), "True True True False 1");
  in.enable_thinking = false;
  in.tools = nlohmann::ordered_json::array();
  EXPECT_EQ(t.render(in), "False True True True 1");
}

// A plain nlohmann::json converts; ordered_json keeps the key order tojson prints.
TEST(ChatTemplate, KeyOrderOfToolsIsKept) {
  ChatTemplate t("{{ tools[0] | tojson }}");
  ChatTemplateInput in;
  in.messages = nlohmann::ordered_json::array();
  in.tools = nlohmann::ordered_json::parse(R"([{"z": 1, "a": {"y": 2.0, "b": null}}])");
  EXPECT_EQ(t.render(in), R"({"z": 1, "a": {"y": 2.0, "b": null}})");
  in.tools = nlohmann::json::parse(R"([{"z": 1, "a": 2}])");
  EXPECT_EQ(t.render(in), R"({"a": 2, "z": 1})");
}

TEST(ChatTemplate, BadInputIsAnError) {
  ChatTemplate t("{{ messages }}");
  ChatTemplateInput in;
  in.messages = nlohmann::ordered_json::object();
  EXPECT_THROW(t.render(in), Error);
  in.messages = nlohmann::ordered_json::array();
  in.tools = "x";
  EXPECT_THROW(t.render(in), Error);
}

TEST(ChatTemplate, TemplateErrorsNameLineAndColumn) {
  try {
    ChatTemplate t("line one\n{{ raise_exception('no system role') }}");
    t.render({nlohmann::ordered_json::array(), nullptr, false, std::nullopt});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chat template:2:19: no system role");
  }
  try {
    ChatTemplate t("ok\n  {% if x %}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat template:2:"), std::string::npos) << e.what();
  }
}

// A tokenizer_config.json in a directory of its own: CTest runs each test in
// its own process, in parallel, so a shared fixed path would race.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : dir_("chat-template"), path_(dir_.file("qinfer_chat_template_test.json")) {
    std::ofstream(path_) << text;
  }
  const std::string& path() const { return path_; }

 private:
  test::ScratchDir dir_;
  std::string path_;
};

TEST(ChatTemplate, NamedTemplatesPickDefaultOrToolUse) {
  TempFile f(R"({"chat_template": [{"name": "default", "template": "D{{ eos_token }}"},
                                   {"name": "tool_use", "template": "T{{ tools | length }}"}],
                 "eos_token": {"content": "</s>", "special": true}, "bos_token": null,
                 "additional_special_tokens": ["<x>"]})");
  ChatTemplate t = ChatTemplate::from_tokenizer_config(f.path());
  ChatTemplateInput in{nlohmann::ordered_json::array(), nullptr, false, std::nullopt};
  EXPECT_EQ(t.render(in), "D</s>");
  in.tools = nlohmann::ordered_json::parse("[{}, {}]");
  EXPECT_EQ(t.render(in), "T2");
}

TEST(ChatTemplate, ConfigErrorsNameTheFileAndField) {
  auto message_of = [](const std::string& json) {
    TempFile f(json);
    try {
      ChatTemplate::from_tokenizer_config(f.path());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of("{").find("is not valid JSON (line 1, column 2: "), std::string::npos) << message_of("{");
  // A hunt finding: the message was nlohmann's own, with the bytes it read echoed raw.
  EXPECT_EQ(message_of("\xff").find("json.exception"), std::string::npos) << message_of("\xff");
  EXPECT_EQ(message_of("\xff").find('\xff'), std::string::npos) << message_of("\xff");
  EXPECT_NE(message_of("{}").find("no \"chat_template\""), std::string::npos);
  EXPECT_NE(message_of(R"({"chat_template": 5})").find("must be a string or a list"), std::string::npos);
  EXPECT_NE(message_of(R"({"chat_template": [{"name": "x", "template": "y"}]})").find("no template named \"default\""),
            std::string::npos);
  EXPECT_NE(message_of(R"({"chat_template": [{"name": 1}]})").find("chat_template[0]"), std::string::npos);
  EXPECT_NE(message_of(R"({"chat_template": "x", "eos_token": 3})").find("eos_token"), std::string::npos);
  EXPECT_NE(message_of(R"({"chat_template": "{% if %}"})").find("qinfer_chat_template_test.json"), std::string::npos);
  EXPECT_THROW(ChatTemplate::from_tokenizer_config("/nonexistent/tokenizer_config.json"), Error);
}

}  // namespace
}  // namespace qinfer
