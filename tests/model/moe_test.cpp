// Qwen3MoeForCausalLM: the sparse MLP against its definition, the whole
// model against transformers' golden logits (through a mixture equivalent to
// the tiny dense model), and what loading and quantizing do with experts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "golden.h"
#include "model/qwen3.h"
#include "model/sparse_mlp.h"
#include "model/test_model.h"
#include "moe_model.h"
#include "ops/matmul.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

namespace {

// A random f32 matrix, row-major (for the reference) and as panels (for matmul).
struct RandomMatrix {
  std::vector<float> rows;
  std::vector<uint8_t> panels;
  WeightMatrix w;
  RandomMatrix(int64_t r, int64_t c, uint32_t seed, float scale) : rows(test::randn(r * c, seed, scale)) {
    panels.resize(float_panel_bytes(WeightFormat::F32, r, c));
    ThreadPool pool(1);
    w = pack_float_panels(WeightMatrix{WeightFormat::F32, rows.data(), r, c}, panels.data(), pool);
  }
  double dot(int64_t r, const double* x) const {
    double s = 0;
    for (int64_t i = 0; i < w.cols; ++i) s += rows[r * w.cols + i] * x[i];
    return s;
  }
};

struct RandomExpert {
  RandomMatrix gate, up, down;
};

// The block as transformers defines it, in double: softmax of the router's
// logits, the top_k most probable experts, their probabilities (divided by
// their sum when normalizing) weighting the experts' SwiGLU outputs. Also
// returns the smallest gap between the k-th and the next probability, so a
// test knows its routing is not a near tie rounding could flip.
std::vector<double> reference_row(const RandomMatrix& router, const std::vector<RandomExpert>& experts, int64_t k,
                                  bool normalize, const float* x_row, double* gap) {
  const int64_t H = router.w.cols, E = router.w.rows, W = experts[0].gate.w.rows;
  std::vector<double> x(x_row, x_row + H), p(E);
  double z = 0, top = -1e300;
  for (int64_t e = 0; e < E; ++e) top = std::max(top, p[e] = router.dot(e, x.data()));
  for (int64_t e = 0; e < E; ++e) z += p[e] = std::exp(p[e] - top);
  for (double& v : p) v /= z;
  std::vector<int64_t> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  *gap = k < E ? p[order[k - 1]] - p[order[k]] : 1.0;
  double picked = 0;
  for (int64_t j = 0; j < k; ++j) picked += p[order[j]];
  std::vector<double> out(H, 0.0), act(W);
  for (int64_t j = 0; j < k; ++j) {
    const RandomExpert& ex = experts[order[j]];
    const double weight = normalize ? p[order[j]] / picked : p[order[j]];
    for (int64_t i = 0; i < W; ++i) {
      const double g = ex.gate.dot(i, x.data());
      act[i] = g / (1 + std::exp(-g)) * ex.up.dot(i, x.data());
    }
    for (int64_t h = 0; h < H; ++h) out[h] += weight * ex.down.dot(h, act.data());
  }
  return out;
}

TEST(SparseMlp, EveryRowIsItsTopKExpertsWeightedByTheRouter) {
  const int64_t H = 48, E = 8, W = 40;
  RandomMatrix router(E, H, 1, 0.5f);
  std::vector<RandomExpert> experts;
  for (int64_t e = 0; e < E; ++e)
    experts.push_back({RandomMatrix(W, H, 10 + 3 * e, 0.2f), RandomMatrix(W, H, 11 + 3 * e, 0.2f),
                       RandomMatrix(H, W, 12 + 3 * e, 0.2f)});
  ThreadPool pool(2);
  for (const int64_t k : {1, 3, 8})
    for (const bool normalize : {false, true}) {
      SparseMlp mlp{router.w, {}, k, normalize};
      for (const RandomExpert& ex : experts) mlp.experts.push_back({ex.gate.w, ex.up.w, ex.down.w});
      for (const int64_t n : {1, 5, 37}) {
        const std::vector<float> x = test::randn(n * H, static_cast<uint32_t>(100 + n));
        std::vector<float> out(n * H, NAN);
        SparseMlpState state;
        sparse_mlp(mlp, x.data(), n, out.data(), state, pool);
        for (int64_t r = 0; r < n; ++r) {
          double gap;
          const std::vector<double> want = reference_row(router, experts, k, normalize, &x[r * H], &gap);
          ASSERT_GT(gap, 1e-4) << "row " << r << ": a near tie in the routing makes this case no test";
          for (int64_t h = 0; h < H; ++h)
            ASSERT_NEAR(out[r * H + h], want[h], 2e-5 + 2e-5 * std::fabs(want[h]))
                << "k " << k << " normalize " << normalize << " n " << n << " row " << r << " column " << h;
        }
      }
    }
}

// The output may overwrite the input (the forward pass runs it in place).
TEST(SparseMlp, InPlaceGivesTheSameBits) {
  const int64_t H = 32, E = 4, W = 32, n = 6;
  RandomMatrix router(E, H, 2, 0.5f);
  std::vector<RandomExpert> experts;
  for (int64_t e = 0; e < E; ++e)
    experts.push_back({RandomMatrix(W, H, 20 + 3 * e, 0.2f), RandomMatrix(W, H, 21 + 3 * e, 0.2f),
                       RandomMatrix(H, W, 22 + 3 * e, 0.2f)});
  SparseMlp mlp{router.w, {}, 2, true};
  for (const RandomExpert& ex : experts) mlp.experts.push_back({ex.gate.w, ex.up.w, ex.down.w});
  ThreadPool pool(2);
  std::vector<float> x = test::randn(n * H, 3), out(n * H);
  SparseMlpState state;
  sparse_mlp(mlp, x.data(), n, out.data(), state, pool);
  sparse_mlp(mlp, x.data(), n, x.data(), state, pool);
  EXPECT_EQ(std::memcmp(x.data(), out.data(), x.size() * sizeof(float)), 0);
}

// transformers' logits of the tiny model hold for mixtures that compute the
// same function: the MLP cut into 2 or 4 experts, every layer sparse or the
// second one dense (mlp_only_layers).
TEST(MoeModel, AMixtureEquivalentToTheTinyModelGivesItsGoldenLogits) {
  const test::Golden golden = test::load_golden("tiny");
  for (const auto& [experts, dense] : {std::pair<int64_t, std::vector<int64_t>>{2, {}}, {4, {}}, {4, {1}}}) {
    test::ScratchDir dir("moe-golden");
    test::write_dense_equivalent_moe(dir.path(), experts, dense);
    auto model = Qwen3Model::load(dir.path());
    ASSERT_EQ(model->config().num_experts, experts);
    ASSERT_EQ(model->weights().layers[0].sparse_mlp.experts.size(), static_cast<size_t>(experts));
    ASSERT_EQ(model->weights().layers[1].sparse_mlp.experts.size(), dense.empty() ? static_cast<size_t>(experts) : 0u);
    ThreadPool pool(2);
    ForwardState st;
    for (size_t p = 0; p < golden.prompts(); ++p) {
      KvCache cache = model->make_cache();
      auto logits = forward(*model, golden.ids(p), 0, cache, st, pool);
      ASSERT_EQ(logits.size(), golden.vocab());
      EXPECT_LE(test::max_abs_diff(logits, golden.logits_of(p)), 1e-4f) << experts << " experts, prompt " << p;
    }
  }
}

// --weights q8 quantizes the experts and leaves the router as stored; the
// saved checkpoint loads in place and gives the same bits.
TEST(MoeModel, QuantizingKeepsTheRouterAndSavesWhatItRuns) {
  test::ScratchDir dir("moe-q8");
  write_test_model(dir.file("src"), test_model_preset("tiny-moe"), DType::BF16, 7);
  LoadOptions q8;
  q8.weights = WeightFormat::Q8;
  auto model = Qwen3Model::load(dir.file("src"), q8);
  const SparseMlp& mlp = model->weights().layers[1].sparse_mlp;
  ASSERT_EQ(mlp.experts.size(), 8u);
  EXPECT_EQ(mlp.top_k, 2);
  EXPECT_TRUE(mlp.normalize);
  EXPECT_EQ(mlp.router.format, WeightFormat::BF16);
  EXPECT_EQ(mlp.experts[5].down_proj.format, WeightFormat::Q8);
  model->save(dir.file("src"), dir.file("q8"));
  auto saved = Qwen3Model::load(dir.file("q8"));
  EXPECT_EQ(saved->weights().layers[1].sparse_mlp.router.format, WeightFormat::BF16);
  ThreadPool pool(2);
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 358, 1079, 264, 1273};
  ForwardState s1, s2;
  KvCache c1 = model->make_cache(), c2 = saved->make_cache();
  auto a = forward(*model, ids, 0, c1, s1, pool, true);
  const std::vector<float> at_load(a.begin(), a.end());
  auto b = forward(*saved, ids, 0, c2, s2, pool, true);
  ASSERT_EQ(b.size(), at_load.size());
  EXPECT_EQ(std::memcmp(b.data(), at_load.data(), at_load.size() * sizeof(float)), 0);
}

TEST(MoeModel, AMissingExpertIsNamed) {
  test::ScratchDir dir("moe-missing");
  Qwen3Config c = test_model_preset("tiny-moe");
  write_test_model(dir.path(), c, DType::BF16, 1);
  // The config now says 9 experts; the checkpoint has 8.
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir.file("config.json")));
  config["num_experts"] = 9;
  std::ofstream(dir.file("config.json")) << config.dump();
  try {
    Qwen3Model::load(dir.path());
    FAIL() << "loaded 9 experts from a checkpoint of 8";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("num_experts is 9 but the checkpoint has no model.layers.0.mlp.experts.8.down_proj.weight"),
              std::string::npos)
        << what;
  }
  // Layer 1 said to be dense: its dense MLP is not there.
  config["num_experts"] = 8;
  config["mlp_only_layers"] = {1};
  std::ofstream(dir.file("config.json")) << config.dump();
  try {
    Qwen3Model::load(dir.path());
    FAIL() << "loaded a dense layer 1 from experts";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.layers.1.mlp.gate_proj.weight"), std::string::npos) << what;
  }
}

}  // namespace
