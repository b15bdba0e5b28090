// The Qwen3 reply splitter: reasoning apart from the answer, tool calls
// parsed, and the same result however the text is cut into pieces.
#include "server/chat_output.h"

#include <gtest/gtest.h>

using namespace qinfer::server;

namespace {

using XmlTools = std::shared_ptr<const nlohmann::ordered_json>;

ChatDelta whole(const std::string& text, bool starts_in_reasoning = false, ToolCalls tool_calls = ToolCalls::Any,
                XmlTools xml_tools = nullptr) {
  ChatOutputParser p(starts_in_reasoning, tool_calls, std::move(xml_tools));
  ChatDelta d = p.push(text);
  d.append(p.finish());
  return d;
}

// Fed one byte at a time: what a client sees when every token is one character.
ChatDelta bytewise(const std::string& text, bool starts_in_reasoning = false, ToolCalls tool_calls = ToolCalls::Any,
                   XmlTools xml_tools = nullptr) {
  ChatOutputParser p(starts_in_reasoning, tool_calls, std::move(xml_tools));
  ChatDelta d;
  auto add = [&](ChatDelta x) {
    EXPECT_EQ(x.content.find('<'), std::string::npos) << "a raw tag leaked: " << x.content;
    d.append(std::move(x));
  };
  for (char c : text) add(p.push(std::string(1, c)));
  add(p.finish());
  return d;
}

// Fed in pieces of every length from 1 to 7 (no leak check: for replies
// whose tags stay text): each must give what the whole text gives.
void expect_same_in_pieces(const std::string& text, XmlTools xml_tools) {
  const ChatDelta all = whole(text, false, ToolCalls::Any, xml_tools);
  for (size_t piece = 1; piece <= 7; ++piece) {
    ChatOutputParser p(false, ToolCalls::Any, xml_tools);
    ChatDelta d;
    for (size_t at = 0; at < text.size(); at += piece) d.append(p.push(text.substr(at, piece)));
    d.append(p.finish());
    EXPECT_EQ(d.content, all.content) << "pieces of " << piece;
    ASSERT_EQ(d.tool_calls.size(), all.tool_calls.size()) << "pieces of " << piece;
    for (size_t i = 0; i < d.tool_calls.size(); ++i) {
      EXPECT_EQ(d.tool_calls[i].arguments, all.tool_calls[i].arguments);
      EXPECT_EQ(d.tool_calls[i].content_before, all.tool_calls[i].content_before);
    }
  }
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

// The Responses API lists text and calls as items in the order they were
// written: each call says how much of the content came before it, the same
// however the reply was cut into pieces.
TEST(ChatOutput, EachToolCallSaysWhereInTheContentItCame) {
  const std::string text =
      "I will look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
      "{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\nThen I answer.";
  for (const ChatDelta& d : {whole(text), bytewise(text)}) {
    EXPECT_EQ(d.content, "I will look.\nThen I answer.");
    ASSERT_EQ(d.tool_calls.size(), 2u);
    EXPECT_EQ(d.tool_calls[0].content_before, 13u);
    EXPECT_EQ(d.tool_calls[1].content_before, 13u);
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
  ChatDelta f = p.push("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}");  // cut off by max_tokens
  f.append(p.finish());
  ASSERT_EQ(f.tool_calls.size(), 1u);
  EXPECT_EQ(f.tool_calls[0].name, "f");
  EXPECT_EQ(f.tool_calls[0].arguments, R"({"a":1})");
}

// A JSON call is announced once its name is read, then its arguments go out
// as the model writes them (each delta a continuation of that call), as
// OpenAI streams them: a client sees a long argument grow instead of waiting
// for the whole call.
TEST(ChatOutput, JsonToolCallArgumentsStreamAsTheyCome) {
  const std::string text =
      "Sure.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\",\n  \"text\": "
      "\"two  spaces, a \\\"quote\\\" and <b> in a string\", \"n\": [1, 2]}}\n</tool_call>";
  const std::string arguments = R"({"path":"a.txt","text":"two  spaces, a \"quote\" and <b> in a string",)"
                                R"("n":[1,2]})";
  ChatOutputParser p;
  std::vector<ChatDelta> deltas;
  for (char c : text) deltas.push_back(p.push(std::string(1, c)));
  deltas.push_back(p.finish());
  size_t announced_at = 0, pieces = 0;
  std::string joined;
  for (size_t i = 0; i < deltas.size(); ++i)
    for (const ToolCall& call : deltas[i].tool_calls) {
      if (!call.continuation) {
        EXPECT_EQ(call.name, "write_file");
        EXPECT_EQ(call.content_before, 0u) << "the content was sent in earlier deltas";
        announced_at = i;
      }
      joined += call.arguments;
      pieces += !call.arguments.empty();
    }
  EXPECT_EQ(joined, arguments);
  // Announced once "{" of the arguments is read, each later byte of them sent
  // as it came, but for the "<" in the string: held until it is known to begin no tag.
  EXPECT_EQ(announced_at, text.find("{\"path"));
  EXPECT_EQ(pieces, arguments.size() - 1);
  const ChatDelta all = whole(text);
  ASSERT_EQ(all.tool_calls.size(), 1u);
  EXPECT_FALSE(all.tool_calls[0].continuation);
  EXPECT_EQ(all.tool_calls[0].arguments, arguments);
  EXPECT_EQ(all.content, "Sure.\n");
  EXPECT_EQ(bytewise(text).tool_calls[0].arguments, arguments);
  expect_same_in_pieces(text, nullptr);
}

// Review findings on the first version: a call the model cut short or wrote
// malformed ended the reply as "tool_calls" (clients then parse its
// arguments, and fail), and a quote left open in the arguments took the
// </tool_call> and the rest of the answer into them. Once announced, a call
// keeps what was sent; only a well-formed one ends the reply for its calls,
// and </tool_call> ends the call wherever it stands, as before.
TEST(ChatOutput, AStreamedCallLeftMalformedEndsNoReplyForItsCalls) {
  struct Case {
    std::string text, arguments, content;
    bool well_formed;
  };
  const std::vector<Case> cases = {
      {"<tool_call>{\"name\": \"f\", \"arguments\": {\"city\": \"Pa", R"({"city":"Pa)", "", false},
      {"<tool_call>{\"name\": \"f\", \"arguments\": {\"city\": \"Paris}}</tool_call> The weather is fine.",
       R"({"city":"Paris}})", "The weather is fine.", false},
      {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1</tool_call>", R"({"a":1)", "", false},
      {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}} {\"b\": 2}</tool_call>", R"({"a":1})", "", false},
      {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"</b>\"}}</tool_call> Done.", R"({"a":"</b>"})", "Done.",
       true},
  };
  for (const Case& c : cases)
    for (const bool pieces : {false, true}) {
      ChatOutputParser p;
      ChatDelta d;
      if (pieces)
        for (char ch : c.text) d.append(p.push(std::string(1, ch)));
      else
        d.append(p.push(c.text));
      d.append(p.finish());
      ASSERT_EQ(d.tool_calls.size(), 1u) << c.text;
      EXPECT_EQ(d.tool_calls[0].arguments, c.arguments) << c.text;
      EXPECT_EQ(d.content, c.content) << c.text;
      EXPECT_EQ(p.saw_tool_call(), c.well_formed) << c.text;
    }
}

TEST(ChatOutput, StreamedCallsFollowTheRequestsToolChoice) {
  const std::string two =
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1}}</tool_call>\n"
      "<tool_call>{\"name\": \"b\", \"arguments\": {\"y\": 2}}</tool_call>";
  // parallel_tool_calls false: the second call, and every piece of its arguments, is left out.
  for (const ChatDelta& d : {whole(two, false, ToolCalls::One), bytewise(two, false, ToolCalls::One)}) {
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "a");
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"x":1})");
    EXPECT_EQ(d.content, "");
  }
  const ChatDelta d = bytewise(two);
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"y":2})");
  EXPECT_EQ(whole(two, false, ToolCalls::None).content, two);
}

// Other shapes are read whole when the call closes, as before: the arguments
// first, arguments as a JSON string, arguments that are not an object.
TEST(ChatOutput, JsonToolCallsOfOtherShapesComeWhole) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"arguments": {"x": 1}, "name": "f"})", R"({"x":1})"},
      {R"({"name": "f", "arguments": "{\"x\": 1}"})", R"({"x": 1})"},
      {R"({"name": "f", "arguments": [1, 2]})", "[1,2]"},
      {R"({"name": "f"})", "{}"},
      // Hunt findings: "parameters" for the arguments lost them ("{}", silently);
      // a string that is no JSON came back as the arguments' text, which no
      // client parses. vLLM dumps such a string as JSON.
      {R"({"name": "f", "parameters": {"city": "Paris"}})", R"({"city":"Paris"})"},
      {R"({"name": "f", "arguments": "Paris"})", R"("Paris")"},
      {R"({"name": "f", "arguments": ""})", R"("")"},
      {R"({"name": "f", "arguments": ")" + std::string(300, '[') + R"("})", '"' + std::string(300, '[') + '"'},
  };
  for (const auto& [body, arguments] : cases) {
    ChatOutputParser p;
    const std::string text = "<tool_call>" + body + "</tool_call>";
    ChatDelta before;
    for (char c : text.substr(0, text.size() - 1)) before.append(p.push(std::string(1, c)));
    EXPECT_TRUE(before.tool_calls.empty()) << body;
    before.append(p.push(">"));
    ASSERT_EQ(before.tool_calls.size(), 1u) << body;
    EXPECT_EQ(before.tool_calls[0].arguments, arguments) << body;
  }
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
// A hunt finding: that whitespace went out as content before the reasoning
// while streaming (the Responses stream then had a message item before the
// reasoning one, unlike the whole reply's); it is dropped, as vLLM's Qwen3
// reasoning parser drops what comes before <think>.
TEST(ChatOutput, WhitespaceBeforeThinkIsTheSameWholeOrInPieces) {
  const std::string text = "\r\r\n <think>\nreasoning\n</think>\n\nanswer";
  const ChatDelta a = whole(text), b = bytewise(text);
  EXPECT_EQ(a.reasoning, "reasoning\n");
  EXPECT_EQ(b.reasoning, a.reasoning);
  EXPECT_EQ(b.content, a.content);
  EXPECT_EQ(a.content, "answer");
  ChatOutputParser p;
  for (char c : std::string("\n\n <think")) EXPECT_EQ(p.push(std::string(1, c)).content, "");
  EXPECT_EQ(p.push(">r").reasoning, "r");
  // Whitespace that no <think> follows is the answer's.
  EXPECT_EQ(whole("\n\nanswer").content, "\n\nanswer");
  EXPECT_EQ(bytewise("\n\nanswer").content, "\n\nanswer");
  EXPECT_EQ(whole("\n\n").content, "\n\n");
}

// Qwen3-Coder's calls (xml_tool_call.h): parsed where the template teaches
// them, with the values typed by the tools' schemas; the same in pieces.
TEST(ChatOutput, XmlToolCallsOfACoderModel) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "run", "parameters": {"properties": {"cmd": {"type": "string"}}}}}])"));
  const std::string text =
      "I will check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n"
      "<parameter=cmd>\nls -la\n  | wc\n</parameter>\n</function>\n</tool_call>";
  for (const ChatDelta& d : {whole(text, false, ToolCalls::Any, tools), bytewise(text, false, ToolCalls::Any, tools)}) {
    EXPECT_EQ(d.content, "I will check.\n\n");
    ASSERT_EQ(d.tool_calls.size(), 2u);
    EXPECT_EQ(d.tool_calls[0].name, "get_weather");
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"city":"Paris","days":3})");
    EXPECT_EQ(d.tool_calls[1].name, "run");
    EXPECT_EQ(d.tool_calls[1].arguments, R"({"cmd":"ls -la\n  | wc"})");
  }
  // parallel_tool_calls false: the first call only.
  EXPECT_EQ(whole(text, false, ToolCalls::One, tools).tool_calls.size(), 1u);
  // A model that does not write XML calls: the same text stays text, tags included.
  const ChatDelta plain = whole(text);
  EXPECT_TRUE(plain.tool_calls.empty());
  EXPECT_NE(plain.content.find("<function=get_weather>"), std::string::npos);
  // A JSON call (what a required tool_choice's grammar writes) is still read.
  const ChatDelta json =
      whole(R"(<tool_call>{"name": "run", "arguments": {"cmd": "ls"}}</tool_call>)", false, ToolCalls::Any, tools);
  ASSERT_EQ(json.tool_calls.size(), 1u);
  EXPECT_EQ(json.tool_calls[0].arguments, R"({"cmd":"ls"})");
}

// An XML call streams as the model writes it: announced once its first
// parameter opens, a string value as it comes, held back only where what
// follows may still end it. A coding agent writing a file sees it grow.
TEST(ChatOutput, XmlToolCallsStreamAsTheyAreWritten) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object",
      "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"}}}}}])"));
  ChatOutputParser p(false, ToolCalls::Any, tools);
  ChatDelta d = p.push("Writing it.\n<tool_call>\n<function=write_file>\n<parameter=path>\n");
  EXPECT_EQ(d.content, "Writing it.\n");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "write_file");
  EXPECT_EQ(d.tool_calls[0].arguments, R"({"path":")");
  EXPECT_EQ(d.tool_calls[0].content_before, d.content.size());
  d = p.push("a.py\n</parameter>\n<parameter=content>\nprint(1)\n");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].continuation);
  EXPECT_EQ(d.tool_calls[0].arguments, R"x(a.py","content":"print(1))x");
  d = p.push("print(2)\n</parameter>\n<parameter=mode>\n644\n</parameter>\n</function>\n</tool_call>\nDone.");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"x(\nprint(2)","mode":644})x");
  EXPECT_TRUE(p.saw_tool_call());
  EXPECT_EQ(d.content, "Done.");
  // Joined, the stream is the whole answer's call.
  const std::string text =
      "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\nx = 1\n"
      "</parameter>\n</function>\n</tool_call>";
  const ChatDelta all = whole(text, false, ToolCalls::Any, tools);
  ASSERT_EQ(all.tool_calls.size(), 1u);
  EXPECT_EQ(all.tool_calls[0].arguments, R"({"path":"a.py","content":"x = 1"})");
  expect_same_in_pieces(text, tools);
  // parallel_tool_calls false: a second call in the same body is not sent.
  const ChatDelta one = whole(
      "<tool_call>\n<function=write_file>\n</function>\n<function=write_file>\n"
      "<parameter=path>\nb\n</parameter>\n</function>\n</tool_call>",
      false, ToolCalls::One, tools);
  ASSERT_EQ(one.tool_calls.size(), 1u);
  EXPECT_EQ(one.tool_calls[0].arguments, "{}");
}

// A coding agent's call may write the tags themselves into a value.
// Qwen3-Coder often leaves out the <tool_call> opener, mostly after a
// sentence of reasoning, and still writes the closing tag (ollama #16686,
// #18530: one tool turn in five lost, agents then print the XML and stop).
// As vLLM's qwen3_coder parser does, a bare <function=NAME> opens a call,
// where NAME is a tool the request offers; </function> ends it and an orphan
// </tool_call> after it is dropped. Prose that mentions the tag, a name not
// offered, or a call that does not parse stays text.
TEST(ChatOutput, BareXmlCallsOfACoderModelAreCalls) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "Glob", "parameters": {"type": "object",
      "properties": {"pattern": {"type": "string"}, "depth": {"type": "integer"}}}}}])"));
  const std::string call =
      "<function=Glob>\n<parameter=pattern>\n*.md\n</parameter>\n<parameter=depth>\n2\n"
      "</parameter>\n</function>";
  const std::string intro = "I'll use the Glob tool to list the markdown files.\n\n";
  for (const std::string& tail :
       {std::string("\n</tool_call>"), std::string(""), std::string("\n</tool_call>\nDone."), std::string("\nDone.")}) {
    const std::string text = intro + call + tail;
    for (const ChatDelta& d :
         {whole(text, false, ToolCalls::Any, tools), bytewise(text, false, ToolCalls::Any, tools)}) {
      ASSERT_EQ(d.tool_calls.size(), 1u) << text;
      EXPECT_EQ(d.tool_calls[0].name, "Glob");
      EXPECT_EQ(d.tool_calls[0].arguments, R"({"pattern":"*.md","depth":2})");
      EXPECT_EQ(d.tool_calls[0].content_before, intro.size());
      EXPECT_EQ(d.content, intro + (tail.find("Done.") != std::string::npos ? "Done." : "")) << text;
    }
    expect_same_in_pieces(text, tools);
  }
  ChatOutputParser p(false, ToolCalls::Any, tools);
  p.push(intro + call);
  EXPECT_TRUE(p.saw_tool_call());
  // Two bare calls, and a wrapped one after a bare one.
  const ChatDelta two = whole(call + "\n" + call + "\n</tool_call>\n<tool_call>\n" + call + "\n</tool_call>", false,
                              ToolCalls::Any, tools);
  EXPECT_EQ(two.tool_calls.size(), 3u);
  EXPECT_EQ(two.content, "");
  // Text, and what it held back is released as soon as it is known to be text.
  for (const std::string& text :
       {std::string("Write <function=Glob> to call it, then more."),  // the header is no line of its own
        std::string("<function=Find>\n<parameter=pattern>\nx\n</parameter>\n</function>"),  // not offered
        std::string("<function=Glob>\nnot a parameter\n</function>"),                       // no call in it
        std::string("<function=Glob</function> and <function=Glob"),                        // no header
        std::string("<function=Glob></tool_call> then")}) {
    const ChatDelta d = whole(text, false, ToolCalls::Any, tools);
    EXPECT_TRUE(d.tool_calls.empty()) << text;
    EXPECT_EQ(d.content, text);
    expect_same_in_pieces(text, tools);
  }
  // A second review's findings: a header that turned out text took the text after it along, unread (a
  // second opener in it was lost, in some cuttings only), and an opener before the header was read became text.
  const std::string mention = "I'll call <function=Glob> now.\n" + call;
  const ChatDelta mentioned = whole(mention, false, ToolCalls::Any, tools);
  ASSERT_EQ(mentioned.tool_calls.size(), 1u);
  EXPECT_EQ(mentioned.content, "I'll call <function=Glob> now.\n");
  expect_same_in_pieces(mention, tools);
  for (const std::string& opener : {std::string("<function=Glob>\n") + call,
                                    std::string("<function=Glob>\n<tool_call>\n") + call + "\n</tool_call>",
                                    std::string("<function=Glob<function=Glob>\n<parameter=pattern>\n*.md\n"
                                                "</parameter>\n<parameter=depth>\n2\n</parameter>\n</function>")}) {
    const ChatDelta d = whole(opener, false, ToolCalls::Any, tools);
    ASSERT_EQ(d.tool_calls.size(), 1u) << opener;
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"pattern":"*.md","depth":2})");
    EXPECT_EQ(d.content.find("<tool_call>"), std::string::npos) << d.content;
    expect_same_in_pieces(opener, tools);
  }
  ChatOutputParser prose(false, ToolCalls::Any, tools);
  EXPECT_EQ(prose.push("Call <function=Find> and").content, "Call <function=Find> and");
  // Without tools offered, or from a model that does not write XML calls, it is text.
  EXPECT_EQ(whole(intro + call, false, ToolCalls::None, tools).content, intro + call);
  EXPECT_EQ(whole(intro + call).content, intro + call);
}

TEST(ChatOutput, XmlToolCallWhoseValueMentionsTheClosingTag) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::array());
  const std::string text =
      "<tool_call>\n<function=write_file>\n<parameter=content>\nEXPECT(s, \"</tool_call>\");\nint x;\n"
      "</parameter>\n</function>\n</tool_call>";
  for (const ChatDelta& d : {whole(text, false, ToolCalls::Any, tools), bytewise(text, false, ToolCalls::Any, tools)}) {
    EXPECT_EQ(d.content, "");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"content":"EXPECT(s, \"</tool_call>\");\nint x;"})");
  }
  // A function left open, closed by </tool_call> at the end of the reply, is a call (as vLLM takes it);
  // so is one closed by </tool_call> and the next call after it.
  const ChatDelta open = whole("<tool_call><function=f><parameter=p>3</tool_call>", false, ToolCalls::Any, tools);
  ASSERT_EQ(open.tool_calls.size(), 1u);
  EXPECT_EQ(open.tool_calls[0].arguments, R"({"p":"3"})");
  const std::string two =
      "<tool_call>\n<function=run>\n<parameter=cmd>\nx\n</tool_call>\n<tool_call>\n<function=run>\n<parameter=n>\n"
      "5\n</parameter>\n</function>\n</tool_call>";
  const ChatDelta d = whole(two, false, ToolCalls::Any, tools);
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"({"cmd":"x"})");
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"n":"5"})");
  EXPECT_EQ(d.content, "");
  // A JSON call (a required tool_choice's) whose arguments mention the XML tags is still one call.
  const std::string json =
      "<tool_call>{\"name\": \"run\", \"arguments\": {\"cmd\": \"grep '<function=' "
      "x\"}}</tool_call>\nDone.";
  const ChatDelta j = whole(json, false, ToolCalls::Any, tools);
  ASSERT_EQ(j.tool_calls.size(), 1u);
  EXPECT_EQ(j.content, "Done.");
  // Any cut into pieces gives the same, calls or text.
  for (const std::string& t :
       {text, two, json, std::string("<tool_call>\n<function=f>\n<parameter=v>\na <tool_call> b\n"),
        std::string("Use <function=f> then.<tool_call><function=g></function></tool_call> ok")})
    expect_same_in_pieces(t, tools);
}

TEST(ChatOutput, XmlToolCallCutShortOrMalformed) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::array());
  // max_tokens ended it inside a value: the call was announced and keeps what was sent (as OpenAI's
  // stream does), but it is no call the reply ends for (finish_reason stays "length").
  for (const std::string& cut : {std::string("<tool_call>\n<function=run>\n<parameter=cmd>\nrm -rf /tm"),
                                 std::string("<function=run>\n<parameter=cmd>\nrm -rf /tm")}) {
    ChatOutputParser p(false, ToolCalls::Any,
                       std::make_shared<const nlohmann::ordered_json>(
                           nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "run"}}])")));
    ChatDelta d = p.push(cut);
    d.append(p.finish());
    ASSERT_EQ(d.tool_calls.size(), 1u) << cut;
    EXPECT_EQ(d.tool_calls[0].arguments, R"({"cmd":"rm -rf /tm)");
    EXPECT_EQ(d.content, "");
    EXPECT_FALSE(p.saw_tool_call());
    EXPECT_EQ(p.calls_made(), 1);
  }
  // The end of the reply after </function>, without </tool_call> or with part of it: a call.
  for (const char* tail : {"", "\n</tool_"}) {
    const ChatDelta ended =
        whole(std::string("<tool_call>\n<function=run>\n<parameter=cmd>\nls\n</parameter>\n</function>\n") + tail,
              false, ToolCalls::Any, tools);
    ASSERT_EQ(ended.tool_calls.size(), 1u) << tail;
    EXPECT_EQ(ended.tool_calls[0].arguments, R"({"cmd":"ls"})");
    EXPECT_EQ(ended.content, "");
  }
  // A JSON call whose arguments nest too deep to print stays text.
  const std::string deep = "<tool_call>{\"name\": \"run\", \"arguments\": " + std::string(200, '[') +
                           std::string(200, ']') + "}</tool_call>";
  EXPECT_TRUE(whole(deep, false, ToolCalls::Any, tools).tool_calls.empty());
  EXPECT_TRUE(whole(deep).tool_calls.empty());
  // Words after the function inside the tags: not a call, nothing lost.
  const std::string extra = "<tool_call>\n<function=run>\n</function>\nand more</tool_call>";
  const ChatDelta e = whole(extra, false, ToolCalls::Any, tools);
  EXPECT_TRUE(e.tool_calls.empty());
  EXPECT_EQ(e.content, extra);
}

// A review's findings on the streamed XML calls.
TEST(ChatOutput, XmlToolCallsStreamedEndAsTheWholeBodyDoes) {
  const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"b": {"type": "string"},
      "a": {"type": "integer"}}}}}])"));
  // A reply that ends in a </tool_call> begun, then whitespace: the splitter cuts it off, so the reader must not
  // have sent it as a value's (it threw, or gave the integer as text).
  for (const char* tail : {"\n</tool ", "\n</tool_call\n", "\n<\n", "\n< ", "\f", "\v"})
    for (const char* value : {"<parameter=b>\nx\n</parameter>", "<parameter=a>\n5\n</parameter>", ""}) {
      const std::string text = std::string("<tool_call>\n<function=f>\n") + value + "\n</function>" + tail;
      ChatOutputParser p(false, ToolCalls::Any, tools);
      ChatDelta d = p.push(text);
      d.append(p.finish());
      ASSERT_EQ(d.tool_calls.size(), 1u) << text;
      const std::string want = value[0] == 0 ? "{}" : value[11] == 'b' ? R"({"b":"x"})" : R"({"a":5})";
      EXPECT_EQ(d.tool_calls[0].arguments, want) << text;
      EXPECT_TRUE(p.saw_tool_call()) << text;
      EXPECT_EQ(d.content, "") << text;
      expect_same_in_pieces(text, tools);
    }
  // A bare call is one function, of an offered tool: one on a line of its own after it is read as a call of its
  // own (it called h, not offered).
  const std::string bare =
      "I'll do it.\n\n<function=f>\n<parameter=b>\nx\n<function=h>\n<parameter=q>\n1\n</parameter>\n</function>";
  const ChatDelta d = whole(bare, false, ToolCalls::Any, tools);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].arguments, R"({"b":"x"})");
  EXPECT_EQ(d.content, "I'll do it.\n\n<function=h>\n<parameter=q>\n1\n</parameter>\n</function>");
  expect_same_in_pieces(bare, tools);
  const ChatDelta two =
      whole("<function=f>\n<parameter=b>\nx\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
            false, ToolCalls::Any, tools);
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.tool_calls[1].arguments, R"({"a":1})");
  EXPECT_EQ(two.content, "");
  // An element that fails the rules after the call was announced: the arguments sent stand, unfinished (no
  // JSON a client could run by mistake), no call ends the reply, and the text from that element on is not lost.
  const std::string malformed =
      "<tool_call>\n<function=f>\n<parameter=b>\nhello\n</parameter>\n<parameter=a b\nc>\n5\n</parameter>\n"
      "</function>\n</tool_call>\nAfter.";
  ChatOutputParser p(false, ToolCalls::Any, tools);
  ChatDelta m = p.push(malformed);
  m.append(p.finish());
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"b":"hello")");
  EXPECT_FALSE(p.saw_tool_call());
  EXPECT_EQ(m.content, "<parameter=a b\nc>\n5\n</parameter>\n</function>\n</tool_call>\nAfter.");
  expect_same_in_pieces(malformed, tools);
  const ChatDelta second = whole("<tool_call>\n<function=f>\n</function>\n<function=f>\n</function>\ntext</tool_call>",
                                 false, ToolCalls::Any, tools);
  ASSERT_EQ(second.tool_calls.size(), 1u);
  EXPECT_EQ(second.content, "<function=f>\n</function>\ntext</tool_call>");
  // A bare header whose parameter begins past 4 KiB of whitespace is text (the whitespace was read again with
  // every piece), however it is cut; the text is all there.
  const std::string spaces = "<function=f>" + std::string(5000, '\n') + "<parameter=b>\nx\n</function>";
  const ChatDelta s = whole(spaces, false, ToolCalls::Any, tools);
  EXPECT_TRUE(s.tool_calls.empty());
  EXPECT_EQ(s.content, spaces);
  expect_same_in_pieces(spaces, tools);
}
