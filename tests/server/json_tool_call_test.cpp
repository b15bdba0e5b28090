// Reading Qwen3's JSON tool call as it is written: when its shape is known,
// its name, and its arguments as they come.
#include "server/json_tool_call.h"

#include <gtest/gtest.h>

using namespace qinfer::server;
using Shape = JsonToolCallReader::Shape;

namespace {

Shape shape_of(const std::string& body) {
  JsonToolCallReader r;
  r.push(body);
  return r.shape();
}

}  // namespace

TEST(JsonToolCall, TheShapeIsKnownOnceTheArgumentsObjectOpens) {
  const std::string header = "\n{ \"name\" :\"get\\\"weather\\u0021\",\n\"arguments\":  {";
  for (size_t n = 0; n < header.size(); ++n) EXPECT_EQ(shape_of(header.substr(0, n)), Shape::Undecided) << n;
  JsonToolCallReader r;
  EXPECT_EQ(r.push(header), "{");
  EXPECT_EQ(r.shape(), Shape::Streamed);
  EXPECT_EQ(r.name(), "get\"weather!");
  for (const char* other : {"[", "{\"arguments\": {", "{\"name\": 5", "{\"name\": \"f\", \"parameters\": {",
                            "{\"name\": \"f\", \"arguments\": \"", "{\"name\": \"f\", \"arguments\": [",
                            "{\"name\": \"f\"}", "<function=f>", "{\"name\": \"\\x\", \"arguments\": {"})
    EXPECT_EQ(shape_of(other), Shape::Other) << other;
  // A name that never ends is no function's, nor a header that never ends a
  // call's (a review finding: each piece read the spaces again, 4 s for 40 thousand of them).
  EXPECT_EQ(shape_of("{\"name\": " + std::string(2000, ' ') + "\"" + std::string(1000, 'a')), Shape::Undecided);
  EXPECT_EQ(shape_of("{\"name\": \"" + std::string(2000, 'a')), Shape::Other);
  EXPECT_EQ(shape_of("{\"name\": " + std::string(5000, ' ')), Shape::Other);
}

TEST(JsonToolCall, ArgumentsComeCompactAsTheyAreWritten) {
  JsonToolCallReader r;
  std::string arguments;
  const std::string body = R"({"name": "f", "arguments": { "a" : [1, {"b": "x y\"}\\"}],
  "c": null } }
)";
  for (char c : body) {
    arguments += r.push(std::string(1, c));
    EXPECT_EQ(r.arguments_closed(), arguments == R"({"a":[1,{"b":"x y\"}\\"}],"c":null})") << arguments;
  }
  EXPECT_EQ(arguments, R"({"a":[1,{"b":"x y\"}\\"}],"c":null})");
  EXPECT_TRUE(r.arguments_closed());
  EXPECT_EQ(r.push("} trailing {\"x\": 1}"), "") << "nothing after the arguments is theirs";
}
