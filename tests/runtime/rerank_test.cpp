#include "runtime/rerank.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

// Qwen3-Reranker's model card: prefix, "<Instruct>: ...\n<Query>: ...\n<Document>: ...",
// suffix, each tokenized alone and concatenated.
TEST(Rerank, InputIsTheModelCardsPromptTokenizedInItsThreeParts) {
  const Tokenizer tok = Tokenizer::from_file(test::data_path("models/tiny/tokenizer.json"));
  const auto model = Qwen3Model::load(test::data_path("models/tiny"));
  const RerankPrompt prompt(tok, *model);
  const std::string prefix =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
  const std::string pair =
      "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: What is the "
      "capital of China?\n<Document>: The capital of China is Beijing.";
  const std::string suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  const std::vector<int32_t> ids =
      prompt.input_ids(kDefaultRerankInstruction, "What is the capital of China?", "The capital of China is Beijing.");
  std::vector<int32_t> want = tok.encode(prefix);
  for (const std::string& part : {pair, suffix})
    for (int32_t id : tok.encode(part)) want.push_back(id);
  EXPECT_EQ(ids, want);
  EXPECT_EQ(tok.decode(ids), prefix + pair + suffix);
  EXPECT_EQ(ids.front(), 151644);  // <|im_start|>, a special token, not its characters
  EXPECT_EQ(prompt.score_ids(), (std::vector<int32_t>{2152, 9693}));  // "no", "yes"
}

TEST(Rerank, ScoreIsTheProbabilityOfYesAgainstNo) {
  EXPECT_EQ(RerankPrompt::yes_probability(std::vector<float>{1.5f, 1.5f}), 0.5f);
  EXPECT_NEAR(RerankPrompt::yes_probability(std::vector<float>{1, 3}), 1 / (1 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(RerankPrompt::yes_probability(std::vector<float>{3, 1}), 1 / (1 + std::exp(2.0)), 1e-7);
  // Far apart, no overflow: the log-softmax is taken from the larger.
  EXPECT_EQ(RerankPrompt::yes_probability(std::vector<float>{-1000, 1000}), 1.0f);
  EXPECT_EQ(RerankPrompt::yes_probability(std::vector<float>{1000, -1000}), 0.0f);
  EXPECT_THROW(RerankPrompt::yes_probability(std::vector<float>{1}), Error);
}

// vLLM's guide formats the prompt client-side; such a query is not wrapped
// again, and gives the ids qinfer's own formatting gives.
TEST(Rerank, AQueryFormattedAsVllmsGuideHasItIsTakenAsItIs) {
  const Tokenizer tok = Tokenizer::from_file(test::data_path("models/tiny/tokenizer.json"));
  const auto model = Qwen3Model::load(test::data_path("models/tiny"));
  const RerankPrompt prompt(tok, *model);
  const std::string formatted_query =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: "
      "Judge capitals\n<Query>: What is the capital of China?\n";
  const std::string formatted_document =
      "<Document>: The capital of China is Beijing.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  EXPECT_EQ(prompt.input_ids("ignored", formatted_query, formatted_document),
            prompt.input_ids("Judge capitals", "What is the capital of China?", "The capital of China is Beijing."));
}
