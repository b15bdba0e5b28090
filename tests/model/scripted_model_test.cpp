// The scripted test checkpoint (write_scripted_test_model): greedy decoding
// follows its chain exactly, from wherever the prompt's last token sits in it,
// whatever came before; bad chains are refused with a message naming why.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "model/qwen3.h"
#include "model/test_model.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using test::argmax;

namespace {

// Greedy continuation of prompt for n tokens through the single-sequence forward and its KV cache.
std::vector<int32_t> greedy(const Qwen3Model& model, const std::vector<int32_t>& prompt, size_t n) {
  ThreadPool pool(2);
  ForwardState st;
  KvCache cache = model.make_cache();
  std::vector<int32_t> out;
  int32_t next = argmax(forward(model, prompt, 0, cache, st, pool));
  for (size_t i = 0; i < n; ++i) {
    out.push_back(next);
    next = argmax(forward(model, std::span(&next, 1), static_cast<int64_t>(prompt.size() + i), cache, st, pool));
  }
  return out;
}

std::string script_error(std::vector<int32_t> chain) {
  test::ScratchDir d("scripted-bad");
  try {
    write_scripted_test_model(d.file("m"), test_model_preset("tiny"), DType::BF16, chain);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(d.file("m"))) << "nothing is written for a bad chain";
    return e.what();
  }
  return "(no error)";
}

// "\n" <think> The user wants ... </think> "\n\n" <tool_call> {"name": ...} </tool_call> <|im_end|>:
// ids far apart in the vocabulary, special and plain.
const std::vector<int32_t> kChain = {198,    151667, 785,    1196, 6801,  279,   9104,   304,   12095, 13,
                                     151668, 271,    151657, 4913, 606,   788,   330,    455,   69364, 2198,
                                     16370,  22317,  8926,   3252, 59604, 30975, 151658, 151645};

}  // namespace

TEST(ScriptedModel, GreedyDecodingFollowsTheChainFromAnyPointWhateverCameBefore) {
  for (const DType dtype : {DType::BF16, DType::F32}) {
    test::ScratchDir d("scripted");
    write_scripted_test_model(d.path(), test_model_preset("tiny"), dtype, kChain);
    auto model = Qwen3Model::load(d.path());
    EXPECT_FALSE(model->config().tie_word_embeddings);
    const std::vector<int32_t> rest(kChain.begin() + 1, kChain.end());
    // A prompt of unrelated tokens (and chain tokens out of order) ending in the chain's start.
    EXPECT_EQ(greedy(*model, {9707, 11, 151644, 12095, 77091, 198}, rest.size()), rest);
    EXPECT_EQ(greedy(*model, {198}, rest.size()), rest);
    // Starting mid-chain (as a prompt ending in "\n\n" does) continues from there.
    const auto mid = std::find(kChain.begin(), kChain.end(), 271);
    EXPECT_EQ(greedy(*model, {1, 2, 3, 271}, static_cast<size_t>(kChain.end() - mid - 1)),
              std::vector<int32_t>(mid + 1, kChain.end()));
  }
}

TEST(ScriptedModel, ATokenMayRecurWithTheSameSuccessor) {
  test::ScratchDir d("scripted-cycle");
  write_scripted_test_model(d.path(), test_model_preset("tiny"), DType::BF16, std::vector<int32_t>{10, 20, 30, 10, 20});
  auto model = Qwen3Model::load(d.path());
  EXPECT_EQ(greedy(*model, {10}, 7), (std::vector<int32_t>{20, 30, 10, 20, 30, 10, 20}));
}

TEST(ScriptedModel, BadChainsAreRefusedWithTheReason) {
  EXPECT_NE(script_error({10, 20, 10, 30}).find("token id 10 is followed by 20 at position 1 and by 30 at position 3"),
            std::string::npos)
      << script_error({10, 20, 10, 30});
  EXPECT_NE(script_error({10, 151936}).find("token 1 is id 151936, outside the vocabulary [0, 151936)"),
            std::string::npos);
  EXPECT_NE(script_error({-1, 5}).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(script_error({10}).find("at least two tokens"), std::string::npos);
  std::vector<int32_t> long_chain(66);  // 65 distinct tokens with a successor; tiny's hidden size is 64
  for (size_t i = 0; i < long_chain.size(); ++i) long_chain[i] = static_cast<int32_t>(100 + i);
  EXPECT_NE(script_error(long_chain).find("65 distinct tokens have a successor, but hidden size 64 holds at most 64"),
            std::string::npos)
      << script_error(long_chain);
  long_chain.pop_back();  // 64 fit
  test::ScratchDir d("scripted-full");
  write_scripted_test_model(d.path(), test_model_preset("tiny"), DType::BF16, long_chain);
  auto model = Qwen3Model::load(d.path());
  EXPECT_EQ(greedy(*model, {100}, 64), std::vector<int32_t>(long_chain.begin() + 1, long_chain.end()));
}
