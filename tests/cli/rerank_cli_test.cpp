// `qinfer rerank` through the built binary: each document's score is P(yes)
// from the logits of its Qwen3-Reranker prompt computed alone, the same bits
// at any parallelism; documents from arguments or stdin, errors in place.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hidden_state.h"
#include "json_lines.h"
#include "model/qwen3.h"
#include "runtime/rerank.h"
#include "sequence_classifier.h"
#include "test_util.h"
#include "text/tokenizer.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::json_lines_of;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;
using namespace qinfer;

TEST(RerankCli, EachScoreIsItsPromptsYesProbabilityComputedAloneAtAnyParallelism) {
  const std::string model = data_path("models/tiny");
  auto m = Qwen3Model::load(model);
  const Tokenizer tok = Tokenizer::from_file(model + "/tokenizer.json");
  const RerankPrompt prompt(tok, *m);
  ThreadPool pool(1);
  const std::string query = "What is the capital of China?", instruct = "Judge capitals";
  const std::vector<std::string> docs = {"The capital of China is Beijing.", "Gravity is a force.", "", "Paris"};
  std::vector<float> want;
  for (const std::string& doc : docs) {
    const std::vector<float> logits = test::logits_alone(*m, prompt.input_ids(instruct, query, doc), pool);
    want.push_back(RerankPrompt::yes_probability(std::vector<float>{logits[2152], logits[9693]}));
  }
  std::string args;
  for (const std::string& d : docs) args += " '" + d + "'";
  for (const char* flags : {"--parallel 1", "--parallel 8", "--parallel 3 --max-batch-tokens 7"}) {
    const auto res = run_command(qinfer_binary() + " rerank -m " + model + " -q '" + query + "' --instruct '" +
                                 instruct + "' -t 2 " + flags + args + " 2>/dev/null");
    ASSERT_EQ(res.exit_code, 0) << flags << "\n" << res.output;
    const std::vector<json> out = json_lines_of(res.output);
    ASSERT_EQ(out.size(), docs.size()) << flags;
    for (size_t i = 0; i < docs.size(); ++i) {
      EXPECT_EQ(out[i]["index"], i);
      EXPECT_EQ(out[i]["prompt_tokens"], prompt.input_ids(instruct, query, docs[i]).size());
      EXPECT_EQ(out[i]["relevance_score"].get<float>(), want[i]) << flags << ": document " << i;
    }
  }
}

TEST(RerankCli, DocumentsFromStdinAndAnErrorInItsPlace) {
  test::ScratchDir dir("rerank-cli");
  const std::string input = dir.file("docs.txt");
  std::string long_doc;
  for (int i = 0; i < 40; ++i) long_doc += " word";
  std::ofstream(input) << "short\n" << long_doc << "\n";
  // 6 blocks of 16: the short document's prompt fits, the long one's does not.
  const auto res = run_command(qinfer_binary() + " rerank -m " + data_path("models/tiny") + " -q 'q' --kv-blocks 6 < " +
                               input + " 2>" + dir.file("err"));
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::vector<json> out = json_lines_of(res.output);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].contains("relevance_score")) << out[0].dump();
  EXPECT_EQ(out[1]["error"].get<std::string>().rfind("text 2: the prompt has ", 0), 0u) << out[1].dump();
  std::ifstream err(dir.file("err"));
  std::string summary((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(summary.find("[2 documents (1 refused)"), std::string::npos) << summary;
}

TEST(RerankCli, AQueryIsRequired) {
  const auto res = run_command(qinfer_binary() + " rerank -m " + data_path("models/tiny") + " doc 2>&1");
  EXPECT_EQ(res.exit_code, 2) << res.output;
  EXPECT_NE(res.output.find("--query is required"), std::string::npos) << res.output;
  // A review finding: a query that is not UTF-8 was blamed on every document, with exit 0.
  const auto bad =
      run_command(qinfer_binary() + " rerank -m " + data_path("models/tiny") + " -q \"$(printf '\\377')\" doc 2>&1");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("the query (-q) is not valid UTF-8"), std::string::npos) << bad.output;
  // A hunt's note: a query longer than the context failed every document in-band, with exit 0.
  test::ScratchDir dir("rerank-long-query");
  for (const auto& f : std::filesystem::directory_iterator(data_path("models/tiny")))
    std::filesystem::copy_file(f.path(), dir.file(f.path().filename().string()));
  json config = json::parse(std::ifstream(data_path("models/tiny/config.json")));
  config["max_position_embeddings"] = 100;  // the judging prompt alone is 74 tokens
  std::ofstream(dir.file("config.json"), std::ios::trunc) << config.dump();
  std::string query;
  for (int i = 0; i < 40; ++i) query += "word ";
  const auto long_query = run_command(qinfer_binary() + " rerank -m " + dir.path() + " -q '" + query + "' a b 2>&1");
  EXPECT_EQ(long_query.exit_code, 1) << long_query.output;
  EXPECT_NE(long_query.output.find("with the query (-q) and the task (--instruct), the judging prompt takes"),
            std::string::npos)
      << long_query.output;
  EXPECT_EQ(run_command(qinfer_binary() + " rerank -m " + dir.path() + " -q short a b 2>&1").exit_code, 0);
}

// A Qwen3ForSequenceClassification checkpoint scores the same prompt with the
// sigmoid of its head's logit, the same bits at any parallelism, and (its head
// being "yes" minus "no") P(yes) of the causal model to rounding; untied, it
// loads without an lm_head and still ranks.
TEST(RerankCli, ASequenceClassifierCheckpointScoresWithItsHead) {
  test::ScratchDir dir("rerank-seq-cls");
  auto causal = Qwen3Model::load(data_path("models/tiny"));
  const Tokenizer tok = Tokenizer::from_file(data_path("models/tiny/tokenizer.json"));
  ThreadPool pool(1);
  const std::string query = "What is the capital of China?";
  const std::vector<std::string> docs = {"The capital of China is Beijing.", "Gravity is a force.", "Paris"};
  // Declared a classifier without the head: refused, not run as the causal model.
  const std::string headless = dir.file("headless");
  std::filesystem::create_directories(headless);
  for (const char* f : {"tokenizer.json", "model.safetensors"})
    std::filesystem::copy_file(data_path("models/tiny/") + f, headless + "/" + f);
  json config = json::parse(std::ifstream(data_path("models/tiny/config.json")));
  config["architectures"] = {"Qwen3ForSequenceClassification"};
  std::ofstream(headless + "/config.json") << config.dump();
  const auto refused = run_command(qinfer_binary() + " rerank -m " + headless + " -q q d 2>&1");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("without score.weight"), std::string::npos) << refused.output;
  for (const bool tied : {true, false}) {
    const std::string model = dir.file(tied ? "tied" : "untied");
    test::write_sequence_classifier(model, tied);
    auto m = Qwen3Model::load(model);
    ASSERT_TRUE(m->has_classifier());
    EXPECT_EQ(m->has_lm_head(), tied);
    const RerankPrompt prompt(tok, *m);
    EXPECT_TRUE(prompt.uses_classifier());
    std::string args;
    for (const std::string& d : docs) args += " '" + d + "'";
    for (const char* flags : {"--parallel 1", "--parallel 8 --max-batch-tokens 7"}) {
      const auto res =
          run_command(qinfer_binary() + " rerank -m " + model + " -q '" + query + "' " + flags + args + " 2>/dev/null");
      ASSERT_EQ(res.exit_code, 0) << res.output;
      const std::vector<json> out = json_lines_of(res.output);
      ASSERT_EQ(out.size(), docs.size()) << res.output;
      for (size_t i = 0; i < docs.size(); ++i) {
        const std::vector<int32_t> ids = prompt.input_ids(kDefaultRerankInstruction, query, docs[i]);
        const float logit = m->classify(test::hidden_alone(*m, ids, pool))[0];
        EXPECT_EQ(out[i]["relevance_score"].get<float>(), 1.0f / (1.0f + std::exp(-logit))) << flags << " " << i;
        const std::vector<float> logits = test::logits_alone(*causal, ids, pool);
        EXPECT_NEAR(out[i]["relevance_score"].get<float>(),
                    RerankPrompt::yes_probability(std::vector<float>{logits[2152], logits[9693]}), 2e-6)
            << "the head is yes minus no: document " << i;
      }
    }
  }
}
