// The Qwen3 chat template and the tokenizer together, as
// apply_chat_template(tokenize=True) does: every case of
// tests/data/chat_template/cases.json rendered, then encoded with special
// tokens recognised, gives the ids transformers produced.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "text/jinja/chat_template.h"
#include "text/tokenizer.h"

namespace qinfer {
namespace {

TEST(ChatTemplateIds, RenderedCasesEncodeToTransformersIds) {
  ChatTemplate chat_template = ChatTemplate::from_tokenizer_config(QINFER_TEST_DATA "/tokenizer_config.json");
  Tokenizer tokenizer = Tokenizer::from_file(QINFER_TEST_DATA "/tokenizer.json");
  std::ifstream in(QINFER_TEST_DATA "/chat_template/cases.json");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::ordered_json cases = nlohmann::ordered_json::parse(ss.str());
  ASSERT_EQ(cases.size(), 47u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ChatTemplateInput input;
    input.messages = c["messages"];
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    if (!c["enable_thinking"].is_null()) input.enable_thinking = c["enable_thinking"].get<bool>();
    std::vector<int32_t> ids = tokenizer.encode(chat_template.render(input));
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>());
  }
}

}  // namespace
}  // namespace qinfer
