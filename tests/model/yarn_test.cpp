// YaRN (rope_scaling "yarn") through the whole model: the frequencies and
// the attention factor reach the forward pass, and a YaRN of factor 1 is
// still transformers' model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "model/qwen3.h"
#include "test_util.h"

using namespace qinfer;

namespace {

// The tiny checkpoint with a rope_scaling entry in its config.
std::unique_ptr<Qwen3Model> tiny_with(const test::ScratchDir& dir, const nlohmann::json& rope_scaling) {
  const std::string tiny = test::data_path("models/tiny");
  std::filesystem::copy_file(tiny + "/model.safetensors", dir.file("model.safetensors"),
                             std::filesystem::copy_options::overwrite_existing);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(tiny + "/config.json"));
  config["rope_scaling"] = rope_scaling;
  std::ofstream(dir.file("config.json")) << config.dump();
  return Qwen3Model::load(dir.path());
}

std::vector<float> last_logits(const Qwen3Model& model, const std::vector<int32_t>& ids) {
  ThreadPool pool(2);
  ForwardState st;
  KvCache cache = model.make_cache();
  auto out = forward(model, ids, 0, cache, st, pool);
  return {out.begin(), out.end()};
}

TEST(Yarn, FactorOneKeepsTheGoldenLogits) {
  const test::Golden golden = test::load_golden("tiny");
  test::ScratchDir dir("yarn-one");
  auto model = tiny_with(dir, {{"rope_type", "yarn"}, {"factor", 1.0}, {"original_max_position_embeddings", 64}});
  ASSERT_TRUE(model->config().yarn);
  EXPECT_EQ(model->rope_scale(), 1.0f);
  for (size_t p = 0; p < golden.prompts(); ++p)
    EXPECT_LE(test::max_abs_diff(last_logits(*model, golden.ids(p)), golden.logits_of(p)), 1e-4f) << "prompt " << p;
}

// Factor 4 over 16 original positions slows the tiny model's slow
// dimensions and scales cos/sin by 1 + 0.1 ln 4: other logits than without
// it, and prefill still gives decode's bits.
TEST(Yarn, ScalingReachesTheForwardPassAndPrefillEqualsDecode) {
  test::ScratchDir plain_dir("yarn-plain"), dir("yarn-four");
  auto plain = tiny_with(plain_dir, nullptr);
  auto yarn = tiny_with(dir, {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16}});
  EXPECT_FLOAT_EQ(yarn->rope_scale(), static_cast<float>(1 + 0.1 * std::log(4.0)));
  EXPECT_EQ(yarn->config().max_position_embeddings, 40960);  // 4 x 16 is less than the model's own
  const std::vector<int32_t> ids = {785, 6722, 315, 9625, 374, 12095, 13, 576, 6722, 315};
  const std::vector<float> a = last_logits(*plain, ids), b = last_logits(*yarn, ids);
  EXPECT_GT(test::max_abs_diff(a, b), 1e-3f);
  ThreadPool pool(2);
  ForwardState st;
  KvCache cache = yarn->make_cache();
  std::vector<float> stepwise;
  for (size_t t = 0; t < ids.size(); ++t) {
    auto out = forward(*yarn, std::span(&ids[t], 1), static_cast<int64_t>(t), cache, st, pool);
    stepwise.assign(out.begin(), out.end());
  }
  ASSERT_EQ(stepwise.size(), b.size());
  EXPECT_EQ(std::memcmp(stepwise.data(), b.data(), b.size() * sizeof(float)), 0);
}

}  // namespace
