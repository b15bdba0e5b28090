// The Qwen3 reply splitter: reasoning apart from the answer, tool calls
// parsed, and the same result however the text is cut into pieces.
#include "server/chat_output.h"

#include <gtest/gtest.h>

using namespace qinfer::server;

namespace {

ChatDelta whole(const std::string& text, bool starts_in_reasoning = false, ToolCalls tool_calls = ToolCalls::Any) {
  ChatOutputParser p(starts_in_reasoning, tool_calls);
  ChatDelta d = p.push(text);
  ChatDelta f = p.finish();
  d.reasoning += f.reasoning;
  d.content += f.content;
  for (auto& t : f.tool_calls) d.tool_calls.push_back(t);
  return d;
}

// Fed one byte at a time: what a client sees when every token is one character.
ChatDelta bytewise(const std::string& text, bool starts_in_reasoning = false, ToolCalls tool_calls = ToolCalls::Any) {
  ChatOutputParser p(starts_in_reasoning, tool_calls);
  ChatDelta d;
  auto add = [&](ChatDelta x) {
    d.reasoning += x.reasoning;
    d.content += x.content;
    for (auto& t : x.tool_calls) d.tool_calls.push_back(t);
    EXPECT_EQ(x.content.find('<'), std::string::npos) << "a raw tag leaked: " << x.content;
  };
  for (char c : text) add(p.push(std::string(1, c)));
  add(p.finish());
  return d;
}

}  // namespace

TEST(ChatOutput, ReasoningApartFromTheAnswer) {
  const std::string text = "<think>\nThe user greets me.\n</think>\n\nHello there!";
  for (const ChatDelta& d : {whole(text), bytewise(text)}) {
    EXPECT_EQ(d.reasoning, "The user greets me.\n");
    EXPECT_EQ(d.content, "Hello there!");
    EXPECT_TRUE(d.tool_calls.empty());
  }
}

TEST(ChatOutput, PromptThatOpenedThinkStartsInReasoning) {
  const ChatDelta d = whole("I should answer.</think>\n\nYes.", true);
  EXPECT_EQ(d.reasoning, "I should answer.");
  EXPECT_EQ(d.content, "Yes.");
}

TEST(ChatOutput, AnswerWithoutReasoningAndLateThinkTagIsText) {
  const ChatDelta d = whole("Plain answer with <think> in it");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Plain answer with <think> in it");
}

TEST(ChatOutput, ToolCallsParsedAndNeverInContent) {
  const std::string text =
      "<think>\nweather needed\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
      "{}}\n</tool_call>";
  for (const ChatDelta& d : {whole(text), bytewise(text)}) {
    EXPECT_EQ(d.reasoning, "weather needed\n");
    EXPECT_EQ(d.content, "Let me check.\n");
    ASSERT_EQ(d.tool_calls.size(), 2u);
    EXPECT_EQ(d.tool_calls[0].name, "get_weather");
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"city":"Paris","unit":"c"})");
    EXPECT_EQ(d.tool_calls[1].name, "get_time");
    EXPECT_EQ(d.tool_calls[1].arguments, "{}");
  }
}

// A hunt finding: a request that offered no tools (or said tool_choice
// "none") got tool_calls back, and a client that sent no tools read content
// null. Such a request's <tool_call> text is the answer; with
// parallel_tool_calls false only the first call is returned.
TEST(ChatOutput, ToolCallsOnlyWhereTheRequestAllowsThem) {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  const std::string text = "<think>\nr\n</think>\n\n" + call + "\n" + call;
  const ChatDelta none = whole(text, false, ToolCalls::None);
  EXPECT_TRUE(none.tool_calls.empty());
  EXPECT_EQ(none.reasoning, "r\n");
  EXPECT_EQ(none.content, call + "\n" + call);
  ChatOutputParser streamed(false, ToolCalls::None);
  std::string content;
  for (char c : text) content += streamed.push(std::string(1, c)).content;
  EXPECT_EQ(content + streamed.finish().content, none.content);
  for (const ChatDelta& d : {whole(text, false, ToolCalls::One), bytewise(text, false, ToolCalls::One)}) {
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "f");
    EXPECT_EQ(d.content, "");
  }
}

TEST(ChatOutput, MalformedToolCallStaysVisibleText) {
  const ChatDelta d = whole("<tool_call>\nnot json\n</tool_call>");
  EXPECT_TRUE(d.tool_calls.empty());
  EXPECT_EQ(d.content, "<tool_call>\nnot json\n</tool_call>");
  // A hunt finding: the space after such a block was dropped, as after a real call.
  EXPECT_EQ(whole("Sure <tool_call>{\"name\": bad}</tool_call> after").content,
            "Sure <tool_call>{\"name\": bad}</tool_call> after");
  ChatOutputParser p;
  p.push("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}");  // cut off by max_tokens
  const ChatDelta f = p.finish();
  ASSERT_EQ(f.tool_calls.size(), 1u);
  EXPECT_EQ(f.tool_calls[0].name, "f");
}

TEST(ChatOutput, TagPrefixAtTheEndIsHeldThenReleased) {
  ChatOutputParser p;
  EXPECT_EQ(p.push("a <tool").content, "a ");
  EXPECT_EQ(p.push("box").content, "<toolbox");
  EXPECT_EQ(p.push(" <").content, " ");
  EXPECT_EQ(p.finish().content, "<");
}

// A fuzz finding: whitespace before <think> arriving in its own pieces made
// the pieces count as the answer's start, so the think block became text.
TEST(ChatOutput, WhitespaceBeforeThinkIsTheSameWholeOrInPieces) {
  const std::string text = "\r\r\n <think>\nreasoning\n</think>\n\nanswer";
  const ChatDelta a = whole(text), b = bytewise(text);
  EXPECT_EQ(a.reasoning, "reasoning\n");
  EXPECT_EQ(b.reasoning, a.reasoning);
  EXPECT_EQ(b.content, a.content);
  EXPECT_EQ(a.content, "\r\r\n answer");
}
