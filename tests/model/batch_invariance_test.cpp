// Batch invariance, the contract the batching engine builds on: a
// position's logits are the same bits whether its prompt was prefilled at
// once, in chunks, or token by token through the KV cache, and whatever
// other sequences share its steps, in every weight format and KV cache type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model/qwen3.h"
#include "model/test_model.h"
#include "ops/matmul_kernels.h"
#include "test_util.h"
#include "util/error.h"

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

// A fixture's directory; "tiny-moe", a random mixture of experts, is written once.
std::string model_dir(const std::string& name) {
  if (name != "tiny-moe") return test::data_path("models/" + name);
  static const test::ScratchDir dir("tiny-moe");
  static const bool written = (write_test_model(dir.path(), test_model_preset("tiny-moe"), DType::BF16, 3), true);
  (void)written;
  return dir.path();
}

// A LoRA adapter (every projection, rank 8) for the tiny fixture, written once.
std::string tiny_lora_adapter() {
  static const test::ScratchDir dir("tiny-lora");
  static const bool written = (write_test_lora_adapter(dir.path(), test_model_preset("tiny"), {}, 4), true);
  (void)written;
  return dir.path();
}

struct Case {
  const char* model;
  std::optional<WeightFormat> weights;
  DType kv;
  bool lora = false;  // with tiny_lora_adapter()
};

LoadOptions load_options(const Case& c) {
  LoadOptions opts;
  opts.weights = c.weights;
  opts.kv_cache = c.kv;
  if (c.lora) opts.lora_adapters = {tiny_lora_adapter()};
  return opts;
}

class BatchInvarianceTest : public ::testing::TestWithParam<Case> {};

TEST_P(BatchInvarianceTest, PrefillChunksAndDecodeGiveTheSameBits) {
  const Case c = GetParam();
  auto model = Qwen3Model::load(model_dir(c.model), load_options(c));
  ThreadPool pool(2);
  // At once, more rows than Q8/Q4 stream the weights for, so prefill's tile
  // order meets decode's.
  const size_t n = kernels::kStreamedRows + 6;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + 13) % 151000));
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

// Several sequences in one batch over a pool of small KV blocks (tables
// interleaved, so no sequence's blocks are contiguous), their prompts cut
// into chunks that differ per sequence and step, some sequences absent from
// some steps: every position's logits are the bits the sequence gets alone.
TEST_P(BatchInvarianceTest, SequencesInABatchGetTheBitsTheyGetAlone) {
  const Case c = GetParam();
  auto model = Qwen3Model::load(model_dir(c.model), load_options(c));
  const Qwen3Config& cfg = model->config();
  const size_t V = static_cast<size_t>(cfg.vocab_size);
  ThreadPool pool(2);
  const std::vector<int64_t> lengths = {9, 1, 14, 5, 11};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<float>> alone;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < lengths[i]; ++t) ids.push_back(static_cast<int32_t>((t * 7919 + 131 * i + 13) % 151000));
    alone.push_back(logits_in_chunks(*model, ids, ids.size(), pool));
    prompts.push_back(std::move(ids));
  }
  const int64_t block = 4, per_seq = 4;  // 4 blocks of 4 positions hold the longest prompt (14)
  KvPool kv(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim, per_seq * lengths.size(), block, c.kv);
  std::vector<std::vector<int32_t>> tables(lengths.size());
  for (int64_t b = 0; b < per_seq; ++b)
    for (size_t i = 0; i < lengths.size(); ++i) tables[i].push_back(static_cast<int32_t>(b * lengths.size() + i));
  std::vector<int64_t> done(lengths.size(), 0);
  ForwardState st;
  for (int step = 0; step < 6; ++step) {
    Batch batch;
    std::vector<size_t> members;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const int64_t chunk = std::min<int64_t>((step + 2 * static_cast<int64_t>(i)) % 5, lengths[i] - done[i]);
      if (chunk == 0) continue;
      batch.tokens.insert(batch.tokens.end(), prompts[i].begin() + done[i], prompts[i].begin() + done[i] + chunk);
      batch.seqs.push_back({chunk, done[i], tables[i], BatchSeq::Logits::All});
      members.push_back(i);
    }
    if (batch.seqs.empty()) continue;
    auto logits = forward(*model, batch, kv, st, pool);
    size_t row = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      const size_t i = members[m];
      for (int64_t t = 0; t < batch.seqs[m].n; ++t, ++row)
        ASSERT_EQ(std::memcmp(&logits[row * V], &alone[i][(done[i] + t) * V], V * sizeof(float)), 0)
            << "step " << step << ": sequence " << i << " position " << done[i] + t << " differs from its run alone";
      done[i] += batch.seqs[m].n;
    }
  }
  for (size_t i = 0; i < lengths.size(); ++i) EXPECT_EQ(done[i], lengths[i]) << "sequence " << i;
}

TEST(BatchForward, ABlockTableTooShortIsAnError) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  const Qwen3Config& cfg = model->config();
  KvPool kv(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim, 4, 2);
  ThreadPool pool(1);
  ForwardState st;
  const std::vector<int32_t> table = {0, 1};
  Batch batch{{1, 2, 3, 4, 5}, {{5, 0, table, BatchSeq::Logits::Last}}};
  try {
    forward(*model, batch, kv, st, pool);
    FAIL() << "5 positions went into 2 blocks of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold 5 positions"), std::string::npos) << e.what();
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = std::string(c.model) + "_" + (c.weights ? weight_format_name(*c.weights) : "stored") + "_kv" +
                     std::string(dtype_name(c.kv)) + (c.lora ? "_lora" : "");
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Formats, BatchInvarianceTest,
    ::testing::Values(Case{"tiny", std::nullopt, DType::F32}, Case{"tiny2", std::nullopt, DType::F32},
                      Case{"tiny", WeightFormat::F32, DType::F16}, Case{"tiny", WeightFormat::Q8, DType::F32},
                      Case{"tiny", WeightFormat::Q4, DType::BF16}, Case{"tiny2", WeightFormat::Q8, DType::F16},
                      Case{"tiny2", WeightFormat::Q4, DType::F32}, Case{"tiny-moe", std::nullopt, DType::F32},
                      Case{"tiny-moe", WeightFormat::Q8, DType::F16}, Case{"tiny-moe", WeightFormat::Q4, DType::F32},
                      Case{"tiny", std::nullopt, DType::F32, true}, Case{"tiny", WeightFormat::Q8, DType::F16, true}),
    case_name);

}  // namespace
