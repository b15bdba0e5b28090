// Qwen3-Coder's XML tool calls: the calls a <tool_call> body holds, and each
// value converted to the JSON type its parameter's schema names (vLLM's
// qwen3_coder rules).
#include "server/xml_tool_call.h"

#include <gtest/gtest.h>

using namespace qinfer::server;
using nlohmann::ordered_json;

namespace {

ordered_json tools_with(const char* properties) {
  return ordered_json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "f"}, {"parameters", {{"type", "object"}, {"properties", ordered_json::parse(properties)}}}}}}});
}

// The arguments of the one call to f whose only parameter `p` holds `value`.
ordered_json argument(const ordered_json& tools, const std::string& value) {
  const auto calls =
      parse_xml_tool_calls("<function=f>\n<parameter=p>\n" + value + "\n</parameter>\n</function>", tools);
  EXPECT_EQ(calls.size(), 1u);
  if (calls.size() != 1) return nullptr;
  return ordered_json::parse(calls[0].arguments)["p"];
}

}  // namespace

TEST(XmlToolCall, ValuesTakeTheTypeTheirSchemaNames) {
  const ordered_json integer = tools_with(R"({"p": {"type": "integer"}})");
  EXPECT_EQ(argument(integer, "42"), 42);
  EXPECT_EQ(argument(integer, " -7 "), -7);
  EXPECT_EQ(argument(integer, "1_000"), 1000);
  EXPECT_EQ(argument(integer, "-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(argument(integer, "99999999999999999999999"), "99999999999999999999999");  // beyond 64 bits: text
  EXPECT_EQ(argument(integer, "4.5"), "4.5");                                          // not an integer: text
  EXPECT_EQ(argument(integer, "NULL"), nullptr);
  const ordered_json number = tools_with(R"({"p": {"type": "number"}})");
  EXPECT_EQ(argument(number, "2.5"), 2.5);
  EXPECT_TRUE(argument(number, "3.0").is_number_integer());  // whole: an integer, as vLLM gives it
  EXPECT_EQ(argument(number, "1e3"), 1000);
  EXPECT_EQ(argument(number, "inf"), "inf");  // no JSON number
  EXPECT_EQ(argument(number, "0x10"), "0x10");
  const ordered_json boolean = tools_with(R"({"p": {"type": "boolean"}})");
  EXPECT_EQ(argument(boolean, "True"), true);
  EXPECT_EQ(argument(boolean, "false"), false);
  EXPECT_EQ(argument(boolean, "yes"), false);  // vLLM: anything but "true" is false
  const ordered_json object = tools_with(R"({"p": {"type": "object"}, "q": {"type": ["integer", "null"]}})");
  EXPECT_EQ(argument(object, R"({"a": [1, 2]})"), ordered_json::parse(R"({"a": [1, 2]})"));
  EXPECT_EQ(argument(object, "{broken"), "{broken");
  const ordered_json string = tools_with(R"({"p": {"type": "string"}})");
  EXPECT_EQ(argument(string, "42"), "42");
  EXPECT_EQ(argument(string, "null"), "null");  // a string the schema does not let be null
  // Nullable schemas (an anyOf with "null", as Pydantic writes Optional[...]): the first other type.
  const ordered_json optional_int = tools_with(R"({"p": {"anyOf": [{"type": "integer"}, {"type": "null"}]}})");
  EXPECT_EQ(argument(optional_int, "5"), 5);
  EXPECT_EQ(argument(optional_int, "None"), nullptr);
  const ordered_json optional_string = tools_with(R"({"p": {"anyOf": [{"type": "string"}, {"type": "null"}]}})");
  EXPECT_EQ(argument(optional_string, "null"), nullptr);
  EXPECT_EQ(argument(optional_string, "5"), "5");
  EXPECT_EQ(argument(integer, "None"), nullptr);
  // JSON too deep to print stays text (a reply cannot crash the server).
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(argument(object, deep), deep);
  EXPECT_EQ(argument(string, "\nline\n\n"), "\nline\n\n");  // one newline off each end of "\n\nline\n\n\n"
  // Undeclared parameters and unknown tools keep their text.
  EXPECT_EQ(argument(tools_with(R"({"other": {"type": "integer"}})"), "5"), "5");
  EXPECT_EQ(argument(ordered_json::array(), "5"), "5");
  // A list of types is read as JSON.
  const auto calls = parse_xml_tool_calls("<function=f><parameter=q>7</parameter></function>", object);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"q":7})");
}

TEST(XmlToolCall, ABodyHoldsCallsOnly) {
  const ordered_json tools = ordered_json::array();
  // Two functions in one body, the last left open; parameters left open end at the next one.
  auto calls = parse_xml_tool_calls(
      "\n<function=a>\n<parameter=x>\n1\n<parameter=y>\n<b>2</b>\n</parameter>\n</function>\n<function=c>\n", tools);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "a");
  EXPECT_EQ(calls[0].arguments, R"({"x":"1","y":"<b>2</b>"})");
  EXPECT_EQ(calls[1].name, "c");
  EXPECT_EQ(calls[1].arguments, "{}");
  // Closing tags inside a value (code that mentions them) do not end it: only one
  // followed by the next element or the end does.
  calls = parse_xml_tool_calls(
      "<function=write>\n<parameter=code>\nx = \"</parameter>\" + \"</function>\"\n</parameter>\n"
      "<parameter=n>\n1\n</parameter>\n</function>\n<function=c>\n</function>",
      tools);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments, R"({"code":"x = \"</parameter>\" + \"</function>\"","n":"1"})");
  // A function left open ends where the next begins on a line of its own.
  calls = parse_xml_tool_calls("<function=a><parameter=x>1</parameter>\n<function=b></function>", tools);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments, R"({"x":"1"})");
  EXPECT_EQ(calls[1].name, "b");
  // A bound on the parameters of a call (each value's end is searched for through the rest).
  std::string many = "<function=a>";
  for (int i = 0; i < 1000; ++i) many += "\n<parameter=k" + std::to_string(i) + ">\nx\n</parameter>";
  EXPECT_EQ(parse_xml_tool_calls(many + "\n</function>", tools).size(), 1u);
  EXPECT_TRUE(parse_xml_tool_calls(many + "\n<parameter=k1000>\nx\n</parameter>\n</function>", tools).empty());
  // A value that is not UTF-8 cannot fail the reply.
  calls = parse_xml_tool_calls("<function=a><parameter=x>\xff</parameter></function>", tools);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "{\"x\":\"\xEF\xBF\xBD\"}");
  // Anything else is no call at all.
  for (const char* body : {"", "  \n", "{\"name\": \"a\"}", "<function=>\n</function>", "<function=a\n</function>",
                           "text <function=a></function>", "<function=a></function> text",
                           "<function=a>\nstray\n<parameter=x>1</parameter></function>",
                           "<function=a><parameter=>1</parameter></function>", "<function=a><parameter=x",
                           "<function={{ tool.name }}></function>", "<function=a b></function>"})
    EXPECT_TRUE(parse_xml_tool_calls(body, tools).empty()) << body;
}

namespace {

struct Streamed {
  std::vector<ToolCall> calls;
  bool whole = false;
};

// The body fed to a reader in pieces of `piece` bytes, the pieces joined as a client joins a stream's.
Streamed streamed(const std::string& body, const ordered_json& tools, size_t piece) {
  XmlToolCallReader reader(&tools);
  Streamed s;
  auto take = [&](std::vector<XmlToolCallReader::Piece> pieces) {
    for (auto& p : pieces) {
      if (!p.name.empty()) s.calls.push_back({p.name, ""});
      if (s.calls.empty()) {
        ADD_FAILURE() << "arguments before a call: " << p.arguments;
        continue;
      }
      s.calls.back().arguments += p.arguments;
    }
  };
  for (size_t at = 0; at < body.size(); at += piece) take(reader.push(body.substr(at, piece)));
  take(reader.finish(body.size()));
  s.whole = reader.read_whole();
  return s;
}

// However the body is cut, the streamed calls are parse_xml_tool_calls's.
void expect_streams_as_parsed(const std::string& body, const ordered_json& tools, size_t piece) {
  const std::vector<ToolCall> parsed = parse_xml_tool_calls(body, tools);
  const Streamed s = streamed(body, tools, piece);
  EXPECT_EQ(s.whole, !parsed.empty()) << body << "\npieces of " << piece;
  if (parsed.empty()) return;
  ASSERT_EQ(s.calls.size(), parsed.size()) << body;
  for (size_t i = 0; i < parsed.size(); ++i) {
    EXPECT_EQ(s.calls[i].name, parsed[i].name);
    const ordered_json args = ordered_json::parse(s.calls[i].arguments, nullptr, false);
    EXPECT_EQ(args, ordered_json::parse(parsed[i].arguments))
        << body << "\npieces of " << piece << "\nstreamed: " << s.calls[i].arguments;
  }
}

}  // namespace

TEST(XmlToolCallReader, StreamsWhatTheWholeBodyGives) {
  const ordered_json tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "a", "parameters": {"properties": {
      "x": {"type": "integer"}, "y": {"type": "string"}, "n": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "o": {"type": "object"}}}}}])");
  std::string many = "<function=a>";
  for (int i = 0; i < 1000; ++i) many += "\n<parameter=k" + std::to_string(i) + ">\nx\n</parameter>";
  for (const std::string& body : std::vector<std::string>{
           "\n<function=a>\n<parameter=x>\n1\n<parameter=y>\n<b>2</b>\n</parameter>\n</function>\n<function=c>\n",
           "<function=write>\n<parameter=code>\nx = \"</parameter>\" + \"</function>\"\n</parameter>\n"
           "<parameter=n>\n1\n</parameter>\n</function>\n<function=c>\n</function>",
           "<function=a><parameter=x>1</parameter>\n<function=b></function>",
           "<function=a>\n<parameter=y>\n\n\ntwo blank lines\n\n</parameter>\n<parameter=n>\nNone\n</parameter>\n"
           "<parameter=o>\n{\"k\": [1, 2]}\n</parameter>\n<parameter=x>\n 7 \n</parameter>\n</function>",
           "<function=a><parameter=y>\n</parameter></function>",
           "<function=a><parameter=y></parameter></function>",
           "<function=a><parameter=y>a</parameter> b</parameter>\n\n</function> c </function>  ",
           "<function=a><parameter=y>1</parameter><parameter=y>2</parameter></function>",
           "<function=a><parameter=y>caf\xC3\xA9 \xE2\x82\xAC \xff\xfe</parameter></function>",
           "<function=a><parameter=y>x</tool_call> y</parameter></function>",
           "<function=a>\n<function=b>\n</function>\n\n<function=c>\n<parameter=y>\n</function>",
           many + "\n</function>",
           many + "\n<parameter=k1000>\nx\n</parameter>\n</function>",
           "",
           "  \n",
           "{\"name\": \"a\"}",
           "<function=>\n</function>",
           "<function=a\n</function>",
           "text <function=a></function>",
           "<function=a></function> text",
           "<function=a>\nstray\n<parameter=x>1</parameter></function>",
           "<function=a><parameter=>1</parameter></function>",
           "<function=a><parameter=x",
           "<function={{ tool.name }}></function>",
           "<function=a b></function>",
           "<function=a><parameter=y>1</parameter><parameter=bad\nkey>2</parameter></function>"})
    for (size_t piece : {1, 2, 3, 5, 7, 64, 100000}) expect_streams_as_parsed(body, tools, piece);
}

// Text of a string type goes out as it comes; what may still end the value
// (a closing tag before its next element, a newline that may be the last)
// is held back until it is known; a value of another type comes whole.
TEST(XmlToolCallReader, StringValuesStreamAsTheyCome) {
  const ordered_json tools = tools_with(R"({"path": {"type": "string"}, "n": {"type": "integer"}})");
  XmlToolCallReader reader(&tools);
  auto args = [&](const std::string& text) {
    std::string out;
    for (const auto& p : reader.push(text)) out += (p.name.empty() ? "" : "[" + p.name + "]") + p.arguments;
    return out;
  };
  EXPECT_EQ(args("<function=f>\n<parameter"), "");
  EXPECT_EQ(reader.shape(), XmlToolCallReader::Shape::Undecided);
  EXPECT_EQ(args("=path>\nsrc/ma"), R"([f]{"path":"src/ma)");
  EXPECT_EQ(reader.shape(), XmlToolCallReader::Shape::Streamed);
  EXPECT_EQ(args("in.cpp\n"), "in.cpp");
  EXPECT_EQ(args("</parameter>"), "");
  EXPECT_EQ(args(" more\n"), R"(\n</parameter> more)");
  EXPECT_EQ(args("</parameter>\n<parameter=n>\n4"), R"(",)"
                                                    R"("n":)");
  // Only the next function, or the body's end, makes that </function> the end.
  EXPECT_EQ(args("2\n</parameter>\n</function>"), "");
  const auto end = reader.finish(std::string::npos);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].arguments, "42}");
  EXPECT_TRUE(reader.read_whole());
}

// Random bodies of the grammar's pieces, cut at random: the stream always
// gives what the whole body parses to.
TEST(XmlToolCallReader, RandomBodiesStreamAsParsed) {
  const ordered_json tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {
      "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": ["string", "null"]}}}}}])");
  const std::vector<std::string> parts = {"<function=f>",
                                          "<function=g>",
                                          "<parameter=a>",
                                          "<parameter=b>",
                                          "<parameter=c>",
                                          "</parameter>",
                                          "</function>",
                                          "\n",
                                          "\n",
                                          " ",
                                          "x",
                                          "1",
                                          "<",
                                          ">",
                                          "</tool_call>",
                                          "null",
                                          "\xC3\xA9",
                                          "\xE2\x82",
                                          "\xff",
                                          "<parameter=",
                                          "<function=",
                                          "</",
                                          "<parameter=d>",
                                          "\n<parameter=b>\n",
                                          "\n</parameter>\n",
                                          "\n</function>\n"};
  uint32_t state = 12345;
  auto next = [&](uint32_t n) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % n;
  };
  for (int round = 0; round < 20000; ++round) {
    std::string body = next(4) ? "<function=f>" : "";
    for (uint32_t n = next(14); n > 0; --n) body += parts[next(static_cast<uint32_t>(parts.size()))];
    expect_streams_as_parsed(body, tools, 1 + next(6));
    if (HasFailure()) break;
  }
}
