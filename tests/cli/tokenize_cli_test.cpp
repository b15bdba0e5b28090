// `qinfer tokenize` through the built binary, against the HF fixtures.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::run_command;

namespace {

std::string tokenize_cmd(const std::string& args) {
  return qinfer::test::qinfer_binary() + " tokenize -m " + data_path("models/tiny") + " " + args;
}

// Corpus records spread over the file (prose, code, whitespace, NFC, special tokens, a long document).
std::vector<json> some_corpus_records() {
  std::ifstream in(data_path("tokenizer/corpus.jsonl"));
  std::vector<json> picked;
  size_t n = 0;
  for (std::string line; std::getline(in, line); ++n)
    if (n % 97 == 0 || json::parse(line)["cat"] == "special") picked.push_back(json::parse(line));
  return picked;
}

std::vector<json> output_lines(const std::string& output) {
  std::vector<json> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

}  // namespace

TEST(TokenizeCli, JsonlEncodesLikeHf) {
  qinfer::test::ScratchDir dir("tok-cli");
  const auto records = some_corpus_records();
  ASSERT_GT(records.size(), 50u);
  {
    std::ofstream in(dir.file("in.jsonl"));
    for (const json& r : records) in << json{{"text", r["text"]}}.dump() << "\n";
  }
  const auto r = run_command(tokenize_cmd("--jsonl < " + dir.file("in.jsonl")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto lines = output_lines(r.output);
  ASSERT_EQ(lines.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(lines[i]["ids"], records[i]["ids"]) << records[i]["text"];
}

TEST(TokenizeCli, DecodeWritesTextLines) {
  qinfer::test::ScratchDir dir("tok-cli");
  const auto records = some_corpus_records();
  {
    std::ofstream in(dir.file("in.jsonl"));
    for (const json& r : records) in << json{{"ids", r["ids"]}}.dump() << "\n";
  }
  for (bool skip : {false, true}) {
    const auto r =
        run_command(tokenize_cmd(std::string(skip ? "--skip-special " : "") + "--decode < " + dir.file("in.jsonl")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lines = output_lines(r.output);
    ASSERT_EQ(lines.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      const json& want = skip ? records[i].value("decoded_skip_special", records[i]["decoded"]) : records[i]["decoded"];
      EXPECT_EQ(lines[i]["text"], want) << records[i]["text"];
    }
  }
}

TEST(TokenizeCli, TextPrintsIdsAndPieces) {
  const auto r = run_command(tokenize_cmd("'The capital of France is' 2>&1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("5 tokens: [785,6722,315,9625,374]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("6722\t\xC4\xA0"
                          "capital\t\" capital\""),
            std::string::npos)
      << r.output;
}

// A hunt finding: an empty TEXT was taken for none ("give exactly one of");
// Hugging Face tokenizes "" to no ids.
TEST(TokenizeCli, EmptyTextIsZeroTokens) {
  const auto r = run_command(tokenize_cmd("'' 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "0 tokens: []\n");
}

// As HF's encode(): the post-processor's tokens around the text by default
// (Qwen3-Embedding's tokenizer appends <|endoftext|>), left out when asked.
TEST(TokenizeCli, ThePostProcessorsTokensAreAddedAsHfEncodeAddsThem) {
  qinfer::test::ScratchDir dir("tokenize-embedding");
  const std::string bin = qinfer::test::qinfer_binary();
  ASSERT_EQ(run_command(bin + " make-test-model --preset tiny --embedding --out " + dir.file("m")).exit_code, 0);
  const std::string tokenize = bin + " tokenize -m " + dir.file("m") + " ";
  EXPECT_EQ(run_command(tokenize + "'Hi there' | head -1").output, "3 tokens: [13048,1052,151643]\n");
  EXPECT_EQ(run_command(tokenize + "--no-add-special-tokens 'Hi there' | head -1").output, "2 tokens: [13048,1052]\n");
  EXPECT_EQ(run_command("echo '{\"text\": \"Hi\"}' | " + tokenize + "--jsonl").output, "{\"ids\":[13048,151643]}\n");
  // Qwen3's own post-processor adds nothing.
  EXPECT_EQ(run_command(tokenize_cmd("'Hi there' | head -1")).output, "2 tokens: [13048,1052]\n");
}

TEST(TokenizeCli, BadInputIsAnErrorNamingTheLine) {
  qinfer::test::ScratchDir dir("tok-cli");
  std::ofstream(dir.file("in.jsonl")) << "{\"text\": \"ok\"}\n{\"txt\": \"oops\"}\n";
  const auto r = run_command(tokenize_cmd("--jsonl < " + dir.file("in.jsonl") + " 2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("stdin line 2"), std::string::npos) << r.output;
  // Hunt findings: ids beyond 32 bits, fractions and booleans were truncated or converted into other tokens.
  for (const char* ids : {"[4294967336]", "[18446744073709551615]", "[-1]"}) {
    std::ofstream(dir.file("ids.jsonl")) << "{\"ids\": [40]}\n{\"ids\": " << ids << "}\n";
    const auto bad = run_command(tokenize_cmd("--decode < " + dir.file("ids.jsonl") + " 2>&1"));
    EXPECT_EQ(bad.exit_code, 1) << ids << ": " << bad.output;
    const std::string id = std::string(ids).substr(1, std::string(ids).size() - 2);
    EXPECT_NE(bad.output.find("stdin line 2: token id " + id + " is outside the model's vocabulary [0, 151936)"),
              std::string::npos)
        << ids << ": " << bad.output;
  }
  // A later finding: fractions, booleans and null were then "outside the vocabulary", as if numbers too large.
  for (const char* ids : {"[40.9]", "[1.5]", "[40.0]", "[true]", "[null]", "[\"40\"]"}) {
    std::ofstream(dir.file("ids.jsonl")) << "{\"ids\": [40]}\n{\"ids\": " << ids << "}\n";
    const auto bad = run_command(tokenize_cmd("--decode < " + dir.file("ids.jsonl") + " 2>&1"));
    EXPECT_EQ(bad.exit_code, 1) << ids << ": " << bad.output;
    const std::string id = std::string(ids).substr(1, std::string(ids).size() - 2);
    EXPECT_NE(bad.output.find("stdin line 2: \"ids\" must hold integer token ids, not " + id), std::string::npos)
        << ids << ": " << bad.output;
  }
  // A hunt finding: ids past the tokenizer's but within the model's vocabulary, which generate,
  // batch and the server emit (and decode to nothing), were refused here.
  std::ofstream(dir.file("ids.jsonl")) << "{\"ids\": [40, 151700, 151935]}\n";
  const auto padded = run_command(tokenize_cmd("--decode < " + dir.file("ids.jsonl") + " 2>&1"));
  EXPECT_EQ(padded.exit_code, 0) << padded.output;
  EXPECT_EQ(padded.output, "{\"text\":\"I\"}\n");
  const auto none = run_command(tokenize_cmd("2>&1"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("exactly one of"), std::string::npos) << none.output;
}

// Hunt findings: --skip-special without --decode, and --no-special with it,
// were accepted and did nothing; a file that is not a tokenizer.json was only
// "no \"model\"".
TEST(TokenizeCli, FlagsThatWouldDoNothingAndFilesThatAreNotTokenizersAreRefused) {
  EXPECT_EQ(run_command(tokenize_cmd("--skip-special Hello 2>&1")).exit_code, 2);
  EXPECT_EQ(run_command(tokenize_cmd("--decode --no-special < /dev/null 2>&1")).exit_code, 2);
  const auto r = run_command(qinfer::test::qinfer_binary() + " tokenize -m " +
                             qinfer::test::data_path("models/tiny/config.json") + " Hello 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("config.json: no \"model\" (not a tokenizer.json?)"), std::string::npos) << r.output;
}
