// Batch invariance for one sequence, the contract the batching engine builds
// on: a position's logits are the same bits whether its prompt was prefilled
// at once, in chunks, or token by token through the KV cache, in every
// weight format and KV cache type.
#include <gtest/gtest.h>

#include <cstring>

#include "model/qwen3.h"
#include "test_util.h"

using namespace qinfer;

namespace {

// The logits of every position of `ids`, fed in chunks of `chunk` tokens.
std::vector<float> logits_in_chunks(const Qwen3Model& model, const std::vector<int32_t>& ids, size_t chunk,
                                    ThreadPool& pool) {
  KvCache cache = model.make_cache();
  ForwardState st;
  std::vector<float> all;
  for (size_t p = 0; p < ids.size(); p += chunk) {
    const size_t n = std::min(chunk, ids.size() - p);
    auto out = forward(model, std::span(ids).subspan(p, n), static_cast<int64_t>(p), cache, st, pool, true);
    all.insert(all.end(), out.begin(), out.end());
  }
  return all;
}

struct Case {
  const char* model;
  std::optional<WeightFormat> weights;
  DType kv;
};

class BatchInvarianceTest : public ::testing::TestWithParam<Case> {};

TEST_P(BatchInvarianceTest, PrefillChunksAndDecodeGiveTheSameBits) {
  const Case c = GetParam();
  LoadOptions opts;
  opts.weights = c.weights;
  opts.kv_cache = c.kv;
  auto model = Qwen3Model::load(test::data_path(std::string("models/") + c.model), opts);
  ThreadPool pool(2);
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; ++i) ids.push_back((i * 7919 + 13) % 151000);
  const std::vector<float> at_once = logits_in_chunks(*model, ids, ids.size(), pool);
  const size_t V = static_cast<size_t>(model->config().vocab_size);
  ASSERT_EQ(at_once.size(), ids.size() * V);
  for (size_t chunk : {1, 5, 8}) {
    const std::vector<float> chunked = logits_in_chunks(*model, ids, chunk, pool);
    ASSERT_EQ(chunked.size(), at_once.size());
    for (size_t p = 0; p < ids.size(); ++p)
      ASSERT_EQ(std::memcmp(&chunked[p * V], &at_once[p * V], V * sizeof(float)), 0)
          << "chunks of " << chunk << ": logits of position " << p << " differ";
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(c.model) + "_" + (c.weights ? weight_format_name(*c.weights) : "stored") + "_kv" +
         std::string(dtype_name(c.kv));
}

INSTANTIATE_TEST_SUITE_P(Formats, BatchInvarianceTest,
                         ::testing::Values(Case{"tiny", std::nullopt, DType::F32}, Case{"tiny2", std::nullopt, DType::F32},
                                           Case{"tiny", WeightFormat::F32, DType::F16},
                                           Case{"tiny", WeightFormat::Q8, DType::F32},
                                           Case{"tiny", WeightFormat::Q4, DType::BF16},
                                           Case{"tiny2", WeightFormat::Q8, DType::F16},
                                           Case{"tiny2", WeightFormat::Q4, DType::F32}),
                         case_name);

}  // namespace
