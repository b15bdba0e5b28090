// `qinfer embed` through the built binary, on a checkpoint laid out as
// Qwen3-Embedding ships (make-test-model --embedding): each text gets its
// tokens plus the appended <|endoftext|>, and the last position's final
// hidden state, the same bits in-process and at any parallelism, normalized.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hidden_state.h"
#include "json_lines.h"
#include "model/qwen3.h"
#include "test_util.h"
#include "text/tokenizer.h"

using nlohmann::json;
using qinfer::test::json_lines_of;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;
using namespace qinfer;
using test::hidden_alone;

namespace {

class EmbedCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::ScratchDir("embed-cli");
    const auto res =
        run_command(qinfer_binary() + " make-test-model --preset tiny --embedding --out " + dir_->file("m") + " 2>&1");
    ASSERT_EQ(res.exit_code, 0) << res.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string model() { return dir_->file("m"); }
  static test::ScratchDir* dir_;
};
test::ScratchDir* EmbedCli::dir_ = nullptr;

}  // namespace

TEST_F(EmbedCli, EachTextGetsItsHiddenStateWithTheAppendedEndOfTextAtAnyParallelism) {
  auto m = Qwen3Model::load(model());
  EXPECT_EQ(m->layout().prefix, "");  // laid out as Qwen3-Embedding
  const Tokenizer tok = Tokenizer::from_file(model() + "/tokenizer.json");
  ThreadPool pool(1);
  const std::vector<std::string> texts = {"The capital of France is", "Hello", "", "Paris is the capital of France."};
  std::string args;
  for (const std::string& t : texts) args += " '" + t + "'";
  std::string first_output;
  for (const char* flags : {"--parallel 1", "--parallel 8", "--parallel 3 --max-batch-tokens 3"}) {
    const auto res =
        run_command(qinfer_binary() + " embed -m " + model() + " --no-normalize -t 2 " + flags + args + " 2>/dev/null");
    ASSERT_EQ(res.exit_code, 0) << flags << "\n" << res.output;
    if (first_output.empty()) first_output = res.output;
    EXPECT_EQ(res.output, first_output) << flags;
    const std::vector<json> out = json_lines_of(res.output);
    ASSERT_EQ(out.size(), texts.size()) << flags;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<int32_t> ids = tok.encode(texts[i]);
      ids.push_back(151643);  // <|endoftext|>, as HF's tokenizer(text) appends it for this tokenizer
      EXPECT_EQ(out[i]["index"], i);
      EXPECT_EQ(out[i]["prompt_tokens"], ids.size()) << flags << ": text " << i;
      EXPECT_EQ(out[i]["embedding"].get<std::vector<float>>(), hidden_alone(*m, ids, pool)) << flags << ": text " << i;
    }
  }
}

TEST_F(EmbedCli, NormalizedTruncatedAndInstructedAsQwen3EmbeddingIsUsed) {
  const auto raw = json_lines_of(
      run_command(qinfer_binary() + " embed -m " + model() + " --no-normalize 'a b c' 2>/dev/null").output);
  const auto unit =
      json_lines_of(run_command(qinfer_binary() + " embed -m " + model() + " 'a b c' 2>/dev/null").output);
  const auto four = json_lines_of(
      run_command(qinfer_binary() + " embed -m " + model() + " --dimensions 4 'a b c' 2>/dev/null").output);
  ASSERT_EQ(raw.size(), 1u);
  ASSERT_EQ(unit.size(), 1u);
  ASSERT_EQ(four.size(), 1u);
  const auto r = raw[0]["embedding"].get<std::vector<double>>();
  const auto u = unit[0]["embedding"].get<std::vector<double>>();
  const auto f = four[0]["embedding"].get<std::vector<double>>();
  ASSERT_EQ(u.size(), r.size());
  ASSERT_EQ(f.size(), 4u);
  auto norm = [](const std::vector<double>& v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += v[i] * v[i];
    return std::sqrt(s);
  };
  for (size_t i = 0; i < r.size(); ++i) EXPECT_NEAR(u[i], r[i] / norm(r, r.size()), 1e-6) << i;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(f[i], r[i] / norm(r, 4), 1e-6) << i;

  // --instruct: "Instruct: TASK\nQuery:TEXT", one text per line of standard input.
  const Tokenizer tok = Tokenizer::from_file(model() + "/tokenizer.json");
  const auto res = run_command("printf 'a b c\\nxyz\\n' | " + qinfer_binary() + " embed -m " + model() +
                               " --instruct 'Find the answer' 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const auto q = json_lines_of(res.output);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0]["prompt_tokens"], tok.encode("Instruct: Find the answer\nQuery:a b c").size() + 1);
  EXPECT_EQ(q[1]["prompt_tokens"], tok.encode("Instruct: Find the answer\nQuery:xyz").size() + 1);
  EXPECT_NE(q[0]["embedding"], unit[0]["embedding"]);
}

TEST_F(EmbedCli, BadFlagsAndBadTextsAreNamed) {
  // Too large for the model: a failure while running (1), as the README says; a review finding (it was 2).
  auto res = run_command(qinfer_binary() + " embed -m " + model() + " --dimensions 65 x 2>&1");
  EXPECT_EQ(res.exit_code, 1) << res.output;
  EXPECT_NE(res.output.find("--dimensions 65 is more than the model's 64"), std::string::npos) << res.output;
  res = run_command(qinfer_binary() + " embed -m " + model() + " --dimensions -1 x 2>&1");
  EXPECT_EQ(res.exit_code, 2) << res.output;
  // Invalid UTF-8 fails its own line; the others are embedded.
  res = run_command("printf 'ok\\n\\377\\nfine\\n' | " + qinfer_binary() + " embed -m " + model() + " 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const auto out = json_lines_of(res.output);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].contains("embedding"));
  EXPECT_NE(out[1]["error"].get<std::string>().find("text 2: "), std::string::npos) << out[1];
  EXPECT_TRUE(out[2].contains("embedding"));
  // Review findings: a task that is not UTF-8 was blamed on every text (exit 0); CRLF lines kept their \r.
  res = run_command(qinfer_binary() + " embed -m " + model() + " --instruct \"$(printf '\\377')\" x 2>&1");
  EXPECT_EQ(res.exit_code, 1) << res.output;
  EXPECT_NE(res.output.find("the task (--instruct) is not valid UTF-8"), std::string::npos) << res.output;
  res = run_command("printf 'a\\r\\nb\\r\\n' | " + qinfer_binary() + " embed -m " + model() + " 2>/dev/null");
  const auto args = run_command(qinfer_binary() + " embed -m " + model() + " a b 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.output;
  EXPECT_EQ(res.output, args.output);
}
