// `qinfer batch` through the built binary: results in input order, each
// equal to what `qinfer generate` gives the same request alone, whatever the
// parallelism, chunking and KV pool size; bad lines answered in place.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "json_lines.h"
#include "test_util.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::json_lines_of;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;

namespace {

struct Request {
  std::string prompt;
  int max_tokens;
  double temperature;
  int seed;
};

const Request kRequests[] = {
    {"The capital of France is", 8, 0.0, 0},
    {"Hello", 6, 0.8, 7},
    {"1 2 3 4 5 6 7 8 9 10", 5, 0.0, 0},
    {"The capital of France is", 7, 0.9, 3},
    {"A much longer prompt that needs several chunks", 9, 0.0, 0},
};

std::vector<int> solo_ids(const Request& r) {
  const std::string cmd = qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p '" + r.prompt + "' -n " +
                          std::to_string(r.max_tokens) + " --temp " + std::to_string(r.temperature) + " --seed " +
                          std::to_string(r.seed) + " --ignore-eos --json";
  const auto res = run_command(cmd);
  EXPECT_EQ(res.exit_code, 0) << res.output;
  return json::parse(res.output)["ids"].get<std::vector<int>>();
}

// 2^16 times " word": far longer than any context here, one token a word.
std::string many_words() {
  std::string words;
  for (int i = 0; i < (1 << 16); ++i) words += " word";
  return words;
}

// The output lines of `qinfer batch` over the tiny model and a pool of 3
// blocks (48 positions), the JSON lines of `input` on stdin.
std::vector<json> batch_in_48_positions(const std::string& input) {
  const auto res = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " --kv-blocks 3 < " + input +
                               " 2>/dev/null");
  EXPECT_EQ(res.exit_code, 0) << res.output;
  return json_lines_of(res.output);
}

}  // namespace

TEST(BatchCli, EveryResultEqualsItsSoloGenerateInInputOrder) {
  qinfer::test::ScratchDir dir("batch-cli");
  const std::string input = dir.file("requests.jsonl");
  {
    std::ofstream f(input);
    for (const Request& r : kRequests)
      f << json{{"prompt", r.prompt},
                {"max_tokens", r.max_tokens},
                {"temperature", r.temperature},
                {"seed", r.seed},
                {"ignore_eos", true}}
               .dump()
        << "\n";
  }
  std::vector<std::vector<int>> solo;
  for (const Request& r : kRequests) solo.push_back(solo_ids(r));
  for (const char* flags : {"--parallel 1", "--parallel 8", "--parallel 3 --max-batch-tokens 3",
                            "--parallel 8 --kv-blocks 7 --block-size 4"}) {
    const auto res = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " -t 2 " + flags + " < " +
                                 input + " 2>/dev/null");
    ASSERT_EQ(res.exit_code, 0) << flags << "\n" << res.output;
    const std::vector<json> out = json_lines_of(res.output);
    ASSERT_EQ(out.size(), std::size(kRequests)) << flags;
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i]["ids"].get<std::vector<int>>(), solo[i]) << flags << ": request " << i;
      EXPECT_EQ(out[i]["finish_reason"], "length") << flags;
      EXPECT_TRUE(out[i]["text"].is_string()) << flags;
    }
  }
}

TEST(BatchCli, AnUnseededLineGetsAFreshSeedThatReproducesIt) {
  qinfer::test::ScratchDir dir("batch-seed");
  const std::string input = dir.file("requests.jsonl");
  const std::string line = R"({"prompt_ids": [785, 6722], "max_tokens": 12, "temperature": 1.5, "ignore_eos": true})";
  std::ofstream(input) << line << "\n" << line << "\n";
  const auto res =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::vector<json> out = json_lines_of(res.output);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0]["seed"], out[1]["seed"]) << "each unseeded line draws its own seed";
  json again = json::parse(line);
  again["seed"] = out[1]["seed"];
  std::ofstream(input) << again.dump() << "\n";
  const auto rerun =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_EQ(json_lines_of(rerun.output).at(0)["ids"], out[1]["ids"]);
}

TEST(BatchCli, BadLinesGetAnErrorInTheirPlace) {
  qinfer::test::ScratchDir dir("batch-bad");
  const std::string input = dir.file("requests.jsonl");
  std::ofstream(input) << "{\"prompt_ids\": [785, 6722], \"max_tokens\": 3, \"temperature\": 0}\n"
                       << "not json\n"
                       << "{\"prompt\": \"x\", \"max_tokens\": 0}\n"
                       << "{\"prompt_ids\": [999999999]}\n"
                       << "{\"prompt\": \"a\", \"prompt_ids\": [1]}\n"
                       << "{\"prompt\": \"a\", \"temperature\": -1}\n"
                       << "{\"prompt_ids\": [785], \"max_tokens\": 2, \"stop\": [\"x\", 3]}\n"
                       << "{\"prompt\": \"a\", \"temprature\": 0.5}\n"
                       << "{\"prompt\": \"a\", \"logit_bias\": {\"abc\": 1}}\n"
                       << "{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}\n"
                       << "{\"prompt_ids\": [4294967297]}\n"  // 2^32 + 1 would pass for id 1 in 32 bits
                       << "{\"prompt\": \"a\", \"stop\": " << std::string(100000, '[') << std::string(100000, ']')
                       << "}\n"
                       << "{\"prompt_ids\": [785, 6722], \"max_tokens\": 3, \"temperature\": 0}\n"
                       // As the server reads them (a review finding: refused here): 785.0 is 785, 785.5 no id.
                       << "{\"prompt_ids\": [785.0, 6722], \"max_tokens\": 3, \"temperature\": 0}\n"
                       << "{\"prompt_ids\": [785.5]}\n";
  const auto res =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>&1 >/dev/null");
  const auto out =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 15u);
  EXPECT_EQ(lines[0]["ids"].size(), 3u);
  EXPECT_EQ(lines[12]["ids"], lines[0]["ids"]);
  EXPECT_EQ(lines[13]["ids"], lines[0]["ids"]);
  EXPECT_EQ(lines[14]["error"].get<std::string>().rfind("line 15: \"prompt_ids\" must be an array of token ids", 0), 0u)
      << lines[14].dump();
  const char* errors[] = {"line 2: the line is not valid JSON",
                          "line 3: 'max_tokens' must be between 1 and",
                          "line 4: token id 999999999 is outside the vocabulary",
                          "line 5: give exactly one of",
                          "line 6: ",
                          "line 7: 'stop' must be a string or a list of strings",
                          "line 8: unknown field \"temprature\"",
                          "line 9: 'logit_bias' key 'abc' is not a token id",
                          "line 10: 'messages[0].role' is 'robot'",
                          "line 11: token id 4294967297 is outside the vocabulary",
                          "line 12: the line is nested deeper than 128 levels"};
  for (size_t i = 0; i < std::size(errors); ++i)
    EXPECT_EQ(lines[i + 1]["error"].get<std::string>().rfind(errors[i], 0), 0u) << lines[i + 1].dump();
  EXPECT_NE(res.output.find("15 requests (12 refused)"), std::string::npos) << res.output;
}

// A prompt longer than the context is refused in its line; a huge one (a
// hunt finding: minutes and gigabytes) without being encoded whole.
TEST(BatchCli, APromptLongerThanTheContextIsRefusedInItsLine) {
  qinfer::test::ScratchDir dir("batch-long");
  const std::string input = dir.file("requests.jsonl");
  const std::string words = many_words();
  std::ofstream(input) << R"({"prompt": ")" << words.substr(0, 5 * 48) << "\"}\n"
                       << R"({"prompt": ")" << words << "\"}\n"
                       << R"({"messages": [{"role": "user", "content": ")" << words << "\"}]}\n"
                       << R"({"prompt_ids": [785, 6722], "max_tokens": 2})"
                       << "\n";
  const std::vector<json> out = batch_in_48_positions(input);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["error"],
            "line 1: the prompt has 48 tokens but the context length is 48 tokens: nothing can be generated");
  for (int i : {1, 2})
    EXPECT_EQ(out[i]["error"], "line " + std::to_string(i + 1) +
                                   ": the prompt has more than 48 tokens but the context length is 48 tokens: nothing "
                                   "can be generated");
  EXPECT_EQ(out[3]["ids"].size(), 2u);
}

// truncate_prompt_tokens as the server takes it: a line keeps its prompt's
// last k tokens (-1: what leaves max_tokens room in the context), encoded
// whole first however long.
TEST(BatchCli, TruncatePromptTokensKeepsTheEndOfALongPrompt) {
  qinfer::test::ScratchDir dir("batch-truncate");
  const std::string input = dir.file("requests.jsonl");
  const std::string words = many_words();
  const std::string greedy = R"("max_tokens": 3, "temperature": 0, "ignore_eos": true)";
  std::ofstream(input) << R"({"prompt": ")" << words << R"(", "truncate_prompt_tokens": 6, )" << greedy << "}\n"
                       << R"({"prompt": ")" << words.substr(0, 5 * 6) << R"(", )" << greedy << "}\n"
                       << R"({"messages": [{"role": "user", "content": ")" << words
                       << R"("}], "truncate_prompt_tokens": -1, )" << greedy << "}\n"
                       << R"({"prompt_ids": [785, 6722], "truncate_prompt_tokens": 0})"
                       << "\n";
  const std::vector<json> out = batch_in_48_positions(input);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["prompt_tokens"], 6) << out[0];
  EXPECT_EQ(out[0]["ids"], out[1]["ids"]) << "six \" word\" tokens, cut or sent";
  EXPECT_EQ(out[2]["prompt_tokens"], 48 - 3) << out[2];
  EXPECT_EQ(out[2]["ids"].size(), 3u);
  EXPECT_NE(out[3]["error"].get<std::string>().find("line 4: 'truncate_prompt_tokens' must be -1"), std::string::npos)
      << out[3];
}

// Blank lines are skipped without an output line (README: output lines follow
// the non-blank input lines); an error names the line counting them all.
TEST(BatchCli, BlankLinesAreSkippedWithoutAnOutputLine) {
  qinfer::test::ScratchDir dir("batch-blank");
  const std::string input = dir.file("requests.jsonl");
  std::ofstream(input) << "\n"
                       << R"({"prompt_ids": [785, 6722], "max_tokens": 2, "temperature": 0})"
                       << "\n"
                       << " \t\n\r\n"
                       << R"({"prompt": "x", "max_tokens": 0})"
                       << "\n\n";
  const auto out =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 2u) << out.output;
  EXPECT_EQ(lines[0]["ids"].size(), 2u) << lines[0].dump();
  EXPECT_EQ(lines[1]["error"].get<std::string>().rfind("line 5: 'max_tokens' must be between 1 and", 0), 0u)
      << lines[1].dump();
}

// A review finding: every result waited for the last, so a run stopped
// (Ctrl-C) lost those that had finished. Each now goes out once it and
// those before it are done: here the first, while the second runs on
// (40,000 tokens, far past the 8 s the run is given).
TEST(BatchCli, AResultGoesOutOnceItAndThoseBeforeItAreDone) {
  qinfer::test::ScratchDir dir("batch-order");
  const std::string input = dir.file("requests.jsonl");
  std::ofstream(input) << R"({"prompt": "a", "max_tokens": 1})"
                       << "\n"
                       << R"({"prompt": "b", "max_tokens": 40000, "ignore_eos": true})"
                       << "\n"
                       << R"({"prompt": "c", "max_tokens": 1})"
                       << "\n";
  const auto out = run_command("timeout -s INT 8 " + qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " +
                               input + " 2>/dev/null");
  EXPECT_NE(out.exit_code, 0) << "stopped by the timeout: " << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 1u) << out.output;
  EXPECT_EQ(lines[0]["ids"].size(), 1u) << lines[0].dump();
}

// A hunt finding: a request longer than the whole KV pool made the run fail
// with no result for any line. The pool now caps each request's context.
TEST(BatchCli, ARequestLongerThanThePoolEndsThereAndTheOthersRun) {
  qinfer::test::ScratchDir dir("batch-pool");
  const std::string input = dir.file("requests.jsonl");
  std::ofstream(input) << R"({"prompt_ids": [785, 6722], "max_tokens": 2})"
                       << "\n"
                       << R"({"prompt_ids": [785, 6722], "max_tokens": 100, "ignore_eos": true})"
                       << "\n";
  const auto res = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " --kv-blocks 3 < " + input +
                               " 2>" + dir.file("err"));
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::vector<json> out = json_lines_of(res.output);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["ids"].size(), 2u);
  EXPECT_EQ(out[1]["finish_reason"], "length");
  EXPECT_EQ(out[1]["ids"].size(), 48u - 2) << "3 blocks of 16 positions";
  std::stringstream err;
  err << std::ifstream(dir.file("err")).rdbuf();
  EXPECT_NE(err.str().find("the KV pool holds 48 positions"), std::string::npos) << err.str();
  // A hunt finding: README named --kv-mem for batch, which had only --kv-blocks. 1 MiB: 64 blocks of 16 KiB.
  const auto mib = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " --kv-mem 1 < " + input +
                               " 2>&1 >/dev/null");
  EXPECT_EQ(mib.exit_code, 0) << mib.output;
  EXPECT_NE(mib.output.find("the KV pool holds 1024 positions"), std::string::npos) << mib.output;
}

// Without --kv-blocks the pool is --parallel contexts of the longest request
// (prompt + max_tokens), not of the model's 40960 positions: each new request
// then wrote pages never touched before (docs/performance.md). Every request
// still runs to its max_tokens, with the ids a large pool gives it.
TEST(BatchCli, TheDefaultPoolIsSizedByTheLongestRequest) {
  qinfer::test::ScratchDir dir("batch-sized");
  const std::string input = dir.file("requests.jsonl");
  std::ofstream(input) << R"({"prompt_ids": [785, 6722], "max_tokens": 3, "ignore_eos": true, "seed": 1})"
                       << "\n"
                       << R"({"prompt_ids": [785, 6722, 315], "max_tokens": 30, "ignore_eos": true, "seed": 2})"
                       << "\n";
  const std::string batch = qinfer_binary() + " batch -m " + data_path("models/tiny") + " --parallel 4 ";
  const auto sized = run_command(batch + "< " + input + " 2>" + dir.file("err"));
  const auto large = run_command(batch + "--kv-blocks 4096 < " + input + " 2>/dev/null");
  ASSERT_EQ(sized.exit_code, 0) << sized.output;
  ASSERT_EQ(large.exit_code, 0) << large.output;
  const std::vector<json> out = json_lines_of(sized.output);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["ids"].size(), 3u);
  EXPECT_EQ(out[1]["ids"].size(), 30u);
  EXPECT_EQ(out, json_lines_of(large.output));
  std::stringstream err;
  err << std::ifstream(dir.file("err")).rdbuf();
  EXPECT_NE(err.str().find(" of 12 KV blocks of 16 positions"), std::string::npos)
      << "4 sequences of 33 positions, 3 blocks each\n"
      << err.str();
  EXPECT_EQ(err.str().find("the KV pool holds"), std::string::npos) << "no request is capped\n" << err.str();
}

TEST(BatchCli, BadFlagsFailWithAMessage) {
  for (const char* flags : {"--parallel 0", "--max-batch-tokens 0", "--kv-blocks -3", "--weights q9"}) {
    const auto res =
        run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " " + flags + " < /dev/null 2>&1");
    EXPECT_NE(res.exit_code, 0) << flags;
    EXPECT_NE(res.output.find("error"), std::string::npos) << flags << ": " << res.output;
  }
}

// Lines take response_format and vLLM's structured outputs as the server
// does: the text is a document of the schema, one of the choices, a match of
// the regex; a format it cannot follow is an error in its place.
TEST(BatchCli, ResponseFormatAndStructuredOutputsConstrainTheLine) {
  qinfer::test::ScratchDir dir("batch-format");
  const std::string input = dir.file("requests.jsonl");
  const json schema = {{"type", "object"},
                       {"properties", {{"ok", {{"type", "boolean"}}}, {"size", {{"enum", {"S", "M", "L"}}}}}},
                       {"required", {"ok", "size"}}};
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "item"}, {"schema", schema}}}};
  {
    std::ofstream f(input);
    for (int seed = 1; seed <= 3; ++seed)
      f << json{{"messages", {{{"role", "user"}, {"content", "An item as JSON."}}}},
                {"response_format", format},
                {"temperature", 1},
                {"seed", seed},
                {"max_tokens", 60}}
               .dump()
        << "\n";
    f << json{{"prompt", "x"},
              {"response_format",
               {{"type", "json_schema"},
                {"json_schema", {{"name", "n"}, {"schema", {{"type", "number"}, {"multipleOf", 2}}}}}}}}
             .dump()
      << "\n";
    f << json{{"prompt", "x"}, {"structured_outputs", {{"choice", {"left", "right"}}}}, {"temperature", 1}}.dump()
      << "\n";
    f << json{{"prompt", "x"}, {"guided_regex", "[a-f]{4}"}, {"temperature", 1}, {"seed", 2}}.dump() << "\n";
  }
  const auto out =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_TRUE(lines[4]["text"] == "left" || lines[4]["text"] == "right") << lines[4].dump();
  EXPECT_EQ(lines[4]["finish_reason"], "stop") << lines[4].dump();
  EXPECT_TRUE(std::regex_match(lines[5]["text"].get<std::string>(), std::regex("[a-f]{4}"))) << lines[5].dump();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(lines[i]["finish_reason"], "stop") << lines[i].dump();
    const json doc = json::parse(lines[i]["text"].get<std::string>());
    EXPECT_TRUE(doc["ok"].is_boolean()) << doc.dump();
    EXPECT_TRUE(doc["size"] == "S" || doc["size"] == "M" || doc["size"] == "L") << doc.dump();
  }
  EXPECT_NE(lines[3]["error"].get<std::string>().find("/multipleOf"), std::string::npos) << lines[3].dump();
}

// A review finding: bad_words and allowed_token_ids that leave nothing to
// draw mid-answer ended the whole run ("qinfer: error: sampler: ..."), no
// line written; that line gets its error and the others their results.
// Allowed "hello" and " there"; banned "there"/" there" and "hellohello":
// "hello" first, then nothing.
TEST(BatchCli, BansThatLeaveNothingToDrawFailTheirLineAlone) {
  const auto out = run_command(
      "printf '%s\\n' '{\"prompt\": \"x\", \"max_tokens\": 3}' '{\"prompt\": \"x\", \"max_tokens\": 5, "
      "\"allowed_token_ids\": [14990, 1052], \"bad_words\": [\"hellohello\", \"there\"]}' '{\"prompt\": \"x\", "
      "\"allowed_token_ids\": [14990], \"bad_words\": [\"hello\"]}' | " +
      qinfer_binary() + " batch -m " + data_path("models/tiny") + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 3u) << out.output;
  EXPECT_EQ(lines[0]["ids"].size(), 3u) << lines[0].dump();
  EXPECT_EQ(lines[1]["error"],
            "line 2: nothing can be drawn at output token 2: the request's allowed_token_ids, bad_words and "
            "min_tokens leave no token");
  EXPECT_EQ(lines[2]["error"], "line 3: 'bad_words' ban every id 'allowed_token_ids' allows: nothing could be drawn");
}

// A batch line's text as the server's: the stop id that ended it left out
// unless include_stop_str_in_output, special tokens shown with
// skip_special_tokens false. <|im_end|> (151645) is the tiny model's eos.
TEST(BatchCli, AStopIdThatEndsALineIsLeftOutOfItsTextUnlessAskedFor) {
  const std::string eos =
      R"("prompt": "x", "max_tokens": 2, "allowed_token_ids": [151645], "skip_special_tokens": false)";
  const auto out =
      run_command("printf '%s\\n' '{" + eos + "}' '{" + eos + R"(, "include_stop_str_in_output": true}' '{)" + eos +
                  R"(, "ignore_eos": true}' '{)" + eos + R"(, "ignore_eos": true, "skip_special_tokens": true}' | )" +
                  qinfer_binary() + " batch -m " + data_path("models/tiny") + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 4u) << out.output;
  EXPECT_EQ(lines[0]["text"], "") << lines[0].dump();
  EXPECT_EQ(lines[0]["finish_reason"], "stop");
  EXPECT_EQ(lines[1]["text"], "<|im_end|>") << lines[1].dump();
  EXPECT_EQ(lines[2]["text"], "<|im_end|><|im_end|>") << lines[2].dump();
  EXPECT_EQ(lines[3]["text"], "") << lines[3].dump();
}

// A messages line reads the chat fields as the server does (one place:
// server::render_chat_prompt): tools with a forced tool_choice,
// chat_template_kwargs, continue_final_message. They were "unknown field"s.
TEST(BatchCli, DefaultChatTemplateKwargsApplyToLinesThatDoNotSetTheirOwn) {
  qinfer::test::ScratchDir dir("batch-kwargs");
  const std::string input = dir.file("requests.jsonl");
  const json messages = {{{"role", "user"}, {"content", "2+2?"}}};
  {
    std::ofstream f(input);
    for (const json& kwargs : {json(nullptr), json{{"enable_thinking", true}}, json{{"enable_thinking", false}}}) {
      json line = {{"messages", messages}, {"temperature", 0}, {"max_tokens", 4}, {"ignore_eos", true}};
      if (!kwargs.is_null()) line["chat_template_kwargs"] = kwargs;
      f << line.dump() << "\n";
    }
  }
  const auto run = [&](const std::string& flags) {
    const auto out = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " " + flags + " < " +
                                 input + " 2>/dev/null");
    EXPECT_EQ(out.exit_code, 0) << out.output;
    return json_lines_of(out.output);
  };
  const std::vector<json> plain = run(""), off = run("--default-chat-template-kwargs '{\"enable_thinking\": false}'");
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(off.size(), 3u);
  // Qwen3's template writes an empty think block when thinking is off: a longer prompt.
  ASSERT_NE(plain[0]["prompt_tokens"], plain[2]["prompt_tokens"]);
  for (const char* field : {"prompt_tokens", "ids"}) {
    SCOPED_TRACE(field);
    EXPECT_EQ(off[0][field], plain[2][field]) << "the default";
    EXPECT_EQ(off[1][field], plain[1][field]) << "the line's own";
    EXPECT_EQ(off[2][field], plain[2][field]);
  }

  const auto bad = run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") +
                               " --default-chat-template-kwargs '{\"enable_thinking\": \"no\"}' < " + input + " 2>&1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--default-chat-template-kwargs: 'enable_thinking' must be true, false or null"),
            std::string::npos)
      << bad.output;
}

TEST(BatchCli, MessagesLinesTakeTheServersChatFields) {
  qinfer::test::ScratchDir dir("batch-chat");
  const std::string input = dir.file("requests.jsonl");
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                     "required": ["city"]}}}])");
  const std::string continued = "The answer is";
  {
    std::ofstream f(input);
    f << json{{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
              {"tools", tools},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
              {"chat_template_kwargs", {{"enable_thinking", false}}},
              {"temperature", 0},
              {"max_tokens", 60}}
             .dump()
      << "\n";
    f << json{{"messages", {{{"role", "user"}, {"content", "2+2?"}}, {{"role", "assistant"}, {"content", continued}}}},
              {"continue_final_message", true},
              {"temperature", 0},
              {"max_tokens", 5},
              {"ignore_eos", true}}
             .dump()
      << "\n";
    f << json{{"prompt",
               "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n" + continued},
              {"temperature", 0},
              {"max_tokens", 5},
              {"ignore_eos", true}}
             .dump()
      << "\n";
    f << json{{"prompt", "x"}, {"tools", tools}}.dump() << "\n";
  }
  const auto out =
      run_command(qinfer_binary() + " batch -m " + data_path("models/tiny") + " < " + input + " 2>/dev/null");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::vector<json> lines = json_lines_of(out.output);
  ASSERT_EQ(lines.size(), 4u);
  ASSERT_EQ(lines[0]["finish_reason"], "stop") << lines[0].dump();
  const std::string call = lines[0]["text"];
  const size_t open = call.find("<tool_call>"), close = call.find("</tool_call>");
  ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << call;
  const json parsed = json::parse(call.substr(open + 11, close - open - 11));
  EXPECT_EQ(parsed["name"], "get_weather");
  EXPECT_TRUE(parsed["arguments"]["city"].is_string()) << parsed.dump();
  EXPECT_EQ(lines[1]["ids"], lines[2]["ids"]);
  EXPECT_EQ(lines[1]["prompt_tokens"], lines[2]["prompt_tokens"]);
  EXPECT_EQ(lines[3]["error"], "line 4: \"tools\" goes with \"messages\"");
}
