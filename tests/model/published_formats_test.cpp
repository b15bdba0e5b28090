// Checkpoints in the quantized formats Qwen publishes, FP8 (E4M3 codes, a
// scale per 128 x 128 block) and AWQ (4-bit codes and zeros, a scale per
// group of inputs), load as the weights their codes and scales define,
// converted like any other; one that does not hold together is refused by
// name.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "load_error.h"
#include "model/published_formats.h"
#include "model/quality.h"
#include "model/qwen3.h"
#include "model/test_model.h"
#include "ops/matmul.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using test::load_error;

namespace {

// The tensors of a fixture checkpoint, copied.
std::vector<TensorData> fixture_tensors(const std::string& fixture) {
  SafetensorsFile f(test::data_path("models/" + fixture + "/model.safetensors"));
  std::vector<TensorData> ts;
  for (const auto& [name, t] : f.tensors()) ts.push_back({name, t.dtype, t.shape, {t.data, t.data + t.nbytes}});
  return ts;
}

nlohmann::json fixture_config(const std::string& fixture) {
  return nlohmann::json::parse(std::ifstream(test::data_path("models/" + fixture + "/config.json")));
}

// dir holding `tensors` and the tiny fixture's config, with quantization_config.
void write_checkpoint(const test::ScratchDir& dir, const std::vector<TensorData>& tensors,
                      const nlohmann::json& quantization_config) {
  nlohmann::json config = fixture_config("tiny");
  config["quantization_config"] = quantization_config;
  std::ofstream(dir.file("config.json")) << config.dump();
  write_safetensors(dir.file("model.safetensors"), tensors);
}

const TensorData& named(const std::vector<TensorData>& ts, const std::string& name) {
  for (const TensorData& t : ts)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

// q with `key` set to value, or removed where value is kGone.
const nlohmann::json kGone = nlohmann::json(nlohmann::json::value_t::discarded);
nlohmann::json with_key(nlohmann::json q, const char* key, const nlohmann::json& value) {
  if (value.is_discarded())
    q.erase(key);
  else
    q[key] = value;
  return q;
}

// The weights the codes and scales of `name` define: code x scale of its block.
std::vector<float> fp8_weights(const std::vector<TensorData>& ts, const std::string& name) {
  const TensorData& codes = named(ts, name);
  const TensorData& scales = named(ts, name + "_scale_inv");
  const int64_t rows = codes.shape[0], cols = codes.shape[1], scale_cols = scales.shape[1];
  std::vector<float> w(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t s = static_cast<size_t>((r / kFp8Block) * scale_cols + c / kFp8Block);
      w[r * cols + c] = f8e4m3_to_f32(codes.bytes[r * cols + c]) * load_as_f32(scales.bytes.data(), scales.dtype, s);
    }
  return w;
}

std::vector<float> loaded_weights(const WeightMatrix& m) {
  std::vector<float> w(m.rows * m.cols);
  for (int64_t r = 0; r < m.rows; ++r) widen_row(m, r, &w[r * m.cols]);
  return w;
}

const char* kProjections[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                              "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

const WeightMatrix& projection(const Qwen3Model& m, int64_t layer, const std::string& which) {
  const Qwen3Layer& L = m.weights().layers[layer];
  if (which == "self_attn.q_proj") return L.q_proj;
  if (which == "self_attn.k_proj") return L.k_proj;
  if (which == "self_attn.v_proj") return L.v_proj;
  if (which == "self_attn.o_proj") return L.o_proj;
  if (which == "mlp.gate_proj") return L.gate_proj;
  if (which == "mlp.up_proj") return L.up_proj;
  return L.down_proj;
}

}  // namespace

// As stored, a projection is bf16 of code x scale (transformers dequantizes
// to the config's torch_dtype); with --weights f32 it is the product itself.
// The embeddings are not FP8 and stay as they were.
TEST(Fp8Checkpoint, ProjectionsAreTheirCodesTimesTheirBlockScales) {
  for (DType scale_type : {DType::BF16, DType::F32, DType::F16}) {
    test::ScratchDir dir("fp8");
    const std::vector<TensorData> ts = fp8_block_tensors(fixture_tensors("tiny"), scale_type);
    ASSERT_EQ(named(ts, "model.layers.0.mlp.up_proj.weight").dtype, DType::F8_E4M3);
    ASSERT_EQ(named(ts, "model.layers.0.mlp.up_proj.weight_scale_inv").shape, (std::vector<int64_t>{2, 1}));
    write_checkpoint(dir, ts, fp8_quantization_config());
    LoadOptions f32;
    f32.weights = WeightFormat::F32;
    const auto as_stored = Qwen3Model::load(dir.path()), widened = Qwen3Model::load(dir.path(), f32);
    for (int64_t l = 0; l < 2; ++l)
      for (const std::string p : kProjections) {
        const std::string name = "model.layers." + std::to_string(l) + "." + p + ".weight";
        const std::vector<float> want = fp8_weights(ts, name);
        const WeightMatrix& bf16 = projection(*as_stored, l, p);
        ASSERT_EQ(bf16.format, WeightFormat::BF16) << name;
        const std::vector<float> got = loaded_weights(bf16), got32 = loaded_weights(projection(*widened, l, p));
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i], bf16_to_f32(f32_to_bf16(want[i]))) << name << " " << i << " " << dtype_name(scale_type);
          ASSERT_EQ(got32[i], want[i]) << name << " " << i << " " << dtype_name(scale_type);
        }
      }
    EXPECT_EQ(loaded_weights(as_stored->weights().embed_tokens),
              loaded_weights(Qwen3Model::load(test::data_path("models/tiny"))->weights().embed_tokens));
  }
}

// How a checkpoint in dir follows the tiny fixture it came from, and how its
// --weights q8 follows it, teacher-forced over the golden paths.
namespace {
struct Agreement {
  LogitAgreement with_exact, q8_with_it;
};
// (The q8 half only where asked: each is a model's worth of forward passes,
// several seconds under the sanitizers.)
Agreement agreement_with_tiny(const std::string& what, const std::string& dir, bool with_q8) {
  const auto exact = Qwen3Model::load(test::data_path("models/tiny"));
  const auto model = Qwen3Model::load(dir);
  LoadOptions q8;
  q8.weights = WeightFormat::Q8;
  const auto model_q8 = with_q8 ? Qwen3Model::load(dir, q8) : nullptr;
  const nlohmann::json golden = nlohmann::json::parse(std::ifstream(test::data_path("golden/tiny.json")));
  ThreadPool pool(2);
  Agreement a;
  a.with_exact.clear_margin = a.q8_with_it.clear_margin = 1.0;
  const int64_t V = exact->config().vocab_size;
  for (const auto& p : golden["prompts"]) {
    std::vector<int32_t> seq = p["ids"].get<std::vector<int32_t>>();
    for (int32_t t : p["greedy"].get<std::vector<int32_t>>()) seq.push_back(t);
    const auto ref = teacher_forced_logits(*exact, seq, false, pool);
    const auto got = teacher_forced_logits(*model, seq, false, pool);
    const auto got_q8 = with_q8 ? teacher_forced_logits(*model_q8, seq, false, pool) : got;
    for (size_t i = 0; i < ref.size(); i += static_cast<size_t>(V)) {
      a.with_exact.add(&ref[i], &got[i], V);
      a.q8_with_it.add(&got[i], &got_q8[i], V);
    }
  }
  auto print = [](const std::string& label, const LogitAgreement& x) {
    std::printf("[ %s ] %lld positions: top-1 %.1f%% (clear %.1f%% of %lld), KL %.4f, rms %.3f\n", label.c_str(),
                static_cast<long long>(x.rows), 100 * x.top1(), 100 * x.clear_top1(),
                static_cast<long long>(x.clear_rows), x.mean_kl(), x.rms_error());
  };
  print(what, a.with_exact);
  if (with_q8) print(what + ", its q8", a.q8_with_it);
  EXPECT_GE(a.with_exact.rows, 180);
  if (!with_q8) return a;
  EXPECT_EQ(model_q8->weights().layers[0].q_proj.format, WeightFormat::Q8);
  // Q8 of it follows it as Q8 of the exact model follows that.
  EXPECT_GE(a.q8_with_it.clear_top1(), 0.99);
  EXPECT_GE(a.q8_with_it.top1(), 0.85);
  EXPECT_LT(a.q8_with_it.mean_kl(), 0.05);
  return a;
}
}  // namespace

// The fixture in FP8 follows the exact model as closely as its rounding
// allows (E4M3 keeps 4 significant bits: a weight moves by up to 1/16 of
// itself). Measured: clear top-1 88.5 %, KL 0.21, rms 0.98 (Q8 of the exact
// model: 100 %, ~0.02, ~0.15); scales misapplied give logit errors of the
// logits' own size (~25).
TEST(Fp8Checkpoint, FollowsTheExactModelWithinItsRounding) {
  test::ScratchDir dir("fp8-quality");
  write_checkpoint(dir, fp8_block_tensors(fixture_tensors("tiny")), fp8_quantization_config());
  const Agreement a = agreement_with_tiny("fp8", dir.path(), true);
  EXPECT_GE(a.with_exact.clear_top1(), 0.8);
  EXPECT_LT(a.with_exact.mean_kl(), 0.5);
  EXPECT_LT(a.with_exact.rms_error(), 2.0);
}

// A mixture in FP8, AWQ or GPTQ (Qwen3-30B-A3B-FP8, -GPTQ-Int4): the experts are
// quantized, the router is not (transformers leaves it out) and stays as
// stored under --weights q8 too.
TEST(PublishedFormats, AMixturesExpertsLoadAndItsRouterStaysAsStored) {
  for (const auto& [format, dtype] :
       {std::pair{PublishedFormat::Fp8, DType::BF16}, {PublishedFormat::Awq, DType::F16}}) {
    test::ScratchDir dir("published-moe");
    write_test_model(dir.path(), test_model_preset("tiny-moe"), dtype, 5);
    rewrite_checkpoint_as(dir.path(), format);
    const auto model = Qwen3Model::load(dir.path());
    LoadOptions q8;
    q8.weights = WeightFormat::Q8;
    const auto model_q8 = Qwen3Model::load(dir.path(), q8);
    const SparseMlp& mlp = model->weights().layers[1].sparse_mlp;
    const SparseMlp& mlp_q8 = model_q8->weights().layers[1].sparse_mlp;
    const WeightFormat stored = weight_format_of(dtype);
    ASSERT_EQ(mlp.experts.size(), 8u);
    EXPECT_EQ(mlp.experts[7].down_proj.format, stored);
    EXPECT_EQ(mlp.router.format, stored);
    EXPECT_EQ(mlp_q8.experts[7].down_proj.format, WeightFormat::Q8);
    EXPECT_EQ(mlp_q8.router.format, stored);
    EXPECT_EQ(loaded_weights(mlp.router), loaded_weights(mlp_q8.router));
  }
}

TEST(Fp8Checkpoint, WeightsWithoutAnFp8ConfigAreRefused) {
  test::ScratchDir dir("fp8-noconfig");
  write_checkpoint(dir, fp8_block_tensors(fixture_tensors("tiny")), nullptr);
  EXPECT_NE(load_error(dir.path())
                .find("tensor model.layers.0.self_attn.q_proj.weight is F8_E4M3 but config.json's "
                      "quantization_config does not describe FP8 weights"),
            std::string::npos)
      << load_error(dir.path());
}

TEST(Fp8Checkpoint, MissingMisshapenOrMistypedScalesAreNamed) {
  const std::string k = "model.layers.0.self_attn.k_proj.weight";
  auto with = [&](const std::function<void(std::vector<TensorData>&)>& edit) {
    auto ts = fp8_block_tensors(fixture_tensors("tiny"));
    edit(ts);
    auto dir = std::make_unique<test::ScratchDir>("fp8-scales");
    write_checkpoint(*dir, ts, fp8_quantization_config());
    return load_error(dir->path());
  };
  const std::string missing = with([&](std::vector<TensorData>& ts) {
    std::erase_if(ts, [&](const TensorData& t) { return t.name == k + "_scale_inv"; });
  });
  EXPECT_NE(missing.find("tensor " + k + " is F8_E4M3 but the checkpoint has no " + k + "_scale_inv"),
            std::string::npos)
      << missing;
  const std::string misshapen = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == k + "_scale_inv") t = {t.name, DType::BF16, {2, 1}, std::vector<uint8_t>(4)};
  });
  EXPECT_NE(misshapen.find("tensor " + k + "_scale_inv has shape [2, 1]; [1, 1] blocks of 128 x 128 cover a [64, 64]"),
            std::string::npos)
      << misshapen;
  const std::string mistyped = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == k + "_scale_inv") t = {t.name, DType::U8, {1, 1}, std::vector<uint8_t>(1)};
  });
  EXPECT_NE(mistyped.find("tensor " + k + "_scale_inv is U8; scales are F32, BF16 or F16"), std::string::npos)
      << mistyped;
  const std::string norm = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == "model.layers.0.input_layernorm.weight")
        t = {t.name, DType::F8_E4M3, t.shape, std::vector<uint8_t>(64, 0x38)};
  });
  EXPECT_NE(norm.find("input_layernorm.weight: a norm weight cannot be F8_E4M3"), std::string::npos) << norm;
}

// A NaN code is a corrupt checkpoint: Q8 would hide it in finite codes.
TEST(Fp8Checkpoint, ANanCodeIsNamedWhenQuantizing) {
  test::ScratchDir dir("fp8-nan");
  auto ts = fp8_block_tensors(fixture_tensors("tiny"));
  for (TensorData& t : ts)
    if (t.name == "model.layers.1.mlp.down_proj.weight") t.bytes[5 * 192 + 7] = 0x7f;
  write_checkpoint(dir, ts, fp8_quantization_config());
  LoadOptions q8;
  q8.weights = WeightFormat::Q8;
  EXPECT_NE(load_error(dir.path(), q8).find("tensor model.layers.1.mlp.down_proj.weight row 5 holds NaN"),
            std::string::npos)
      << load_error(dir.path(), q8);
}

TEST(Fp8Checkpoint, QuantizationConfigsItCannotReadAreRefused) {
  const auto ts = fp8_block_tensors(fixture_tensors("tiny"));
  auto config_with = [](const char* key, const nlohmann::json& value) {
    return with_key(fp8_quantization_config(), key, value);
  };
  for (const auto& [q, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {config_with("weight_block_size", kGone), "quantization_config.weight_block_size is missing"},
           {config_with("weight_block_size", {128}), "quantization_config.weight_block_size is [128]"},
           {config_with("weight_block_size", {0, 128}), "quantization_config.weight_block_size is [0,128]"},
           {config_with("weight_block_size", {"128", 128}), "weight_block_size is [\"128\",128]"},
           {config_with("fmt", "e5m2"), "quantization_config.fmt is \"e5m2\": qinfer reads FP8 weights in E4M3"},
           {config_with("activation_scheme", "static"), "quantization_config.activation_scheme is \"static\""}}) {
    test::ScratchDir dir("fp8-config");
    write_checkpoint(dir, ts, q);
    EXPECT_NE(load_error(dir.path()).find(want), std::string::npos) << load_error(dir.path());
  }
}

namespace {

// The weights AWQ's tensors for `base` define, unpacked as AutoAWQ does
// (nibble kReverse[k] of a word holds output 8 j + k): (code - zero) x scale.
std::vector<float> awq_weights(const std::vector<TensorData>& ts, const std::string& base) {
  constexpr int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const TensorData &qweight = named(ts, base + ".qweight"), &qzeros = named(ts, base + ".qzeros"),
                   &scales = named(ts, base + ".scales");
  const int64_t cols = qweight.shape[0], words = qweight.shape[1], rows = 8 * words, group = cols / qzeros.shape[0];
  auto nibble = [&](const TensorData& t, int64_t i, int64_t r) {
    uint32_t word;
    std::memcpy(&word, &t.bytes[4 * (i * words + r / 8)], 4);
    return static_cast<int32_t>((word >> (4 * kReverse[r % 8])) & 0xf);
  };
  std::vector<float> w(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i)
      w[r * cols + i] = static_cast<float>(nibble(qweight, i, r) - nibble(qzeros, i / group, r)) *
                        element(scales, (i / group) * rows + r);
  return w;
}

}  // namespace

// As stored, a projection is (code - zero) x scale in the config's
// torch_dtype (bf16 for the fixture, f16 as Qwen's -AWQ configs say), or its
// dtype, as transformers 4.56 names it (read first); with --weights f32 it
// is the product itself.
TEST(AwqCheckpoint, ProjectionsAreCodeMinusZeroTimesScale) {
  const std::vector<TensorData> ts = awq_group_tensors(fixture_tensors("tiny"), 64);
  ASSERT_EQ(named(ts, "model.layers.0.mlp.down_proj.qweight").shape, (std::vector<int64_t>{192, 8}));
  ASSERT_EQ(named(ts, "model.layers.0.mlp.down_proj.qzeros").shape, (std::vector<int64_t>{3, 8}));
  for (const auto& [key, torch_dtype] : std::vector<std::pair<std::string, const char*>>{{"torch_dtype", "bfloat16"},
                                                                                         {"torch_dtype", "float16"},
                                                                                         {"dtype", "float16"},
                                                                                         {"dtype", "bfloat16"},
                                                                                         {"null dtype", "float16"}}) {
    test::ScratchDir dir("awq");
    write_checkpoint(dir, ts, awq_quantization_config(64));
    nlohmann::json config = nlohmann::json::parse(std::ifstream(dir.file("config.json")));
    // Beside a dtype, the torch_dtype says the other type: dtype must win.
    if (key == "dtype") config["torch_dtype"] = std::string(torch_dtype) == "float16" ? "bfloat16" : "float16";
    if (key == "null dtype") {  // a review finding: a null dtype hid torch_dtype (transformers reads it then)
      config["dtype"] = nullptr;
      config["torch_dtype"] = torch_dtype;
    } else {
      config[key] = torch_dtype;
    }
    std::ofstream(dir.file("config.json")) << config.dump();
    LoadOptions f32;
    f32.weights = WeightFormat::F32;
    const auto as_stored = Qwen3Model::load(dir.path()), widened = Qwen3Model::load(dir.path(), f32);
    const bool bf16 = std::string(torch_dtype) == "bfloat16";
    for (int64_t l = 0; l < 2; ++l)
      for (const std::string p : kProjections) {
        const std::string base = "model.layers." + std::to_string(l) + "." + p;
        const std::vector<float> want = awq_weights(ts, base);
        const WeightMatrix& m = projection(*as_stored, l, p);
        ASSERT_EQ(m.format, bf16 ? WeightFormat::BF16 : WeightFormat::F16) << base;
        const std::vector<float> got = loaded_weights(m), got32 = loaded_weights(projection(*widened, l, p));
        for (size_t i = 0; i < want.size(); ++i) {
          const float rounded = bf16 ? bf16_to_f32(f32_to_bf16(want[i])) : f16_to_f32(f32_to_f16(want[i]));
          ASSERT_EQ(got[i], rounded) << base << " " << i << " " << torch_dtype;
          ASSERT_EQ(got32[i], want[i]) << base << " " << i;
        }
      }
  }
}

// 4-bit codes: on the chaotic fixture (unit-scale weights, logits ~25) AWQ
// behaves like Q4 there (rms 1-3.5, top-1 ~30 %). Measured: rms 3.05, KL
// 2.6, top-1 41 %; a misread layout gives errors of the logits' own size.
TEST(AwqCheckpoint, FollowsTheExactModelWithinItsRounding) {
  test::ScratchDir dir("awq-quality");
  write_checkpoint(dir, awq_group_tensors(fixture_tensors("tiny"), 64), awq_quantization_config(64));
  const Agreement a = agreement_with_tiny("awq", dir.path(), false);
  EXPECT_LT(a.with_exact.rms_error(), 6);
  EXPECT_LT(a.with_exact.mean_kl(), 5);
}

TEST(AwqCheckpoint, QuantizationConfigsItCannotReadAreRefused) {
  const auto ts = awq_group_tensors(fixture_tensors("tiny"), 64);
  auto config_with = [](const char* key, const nlohmann::json& value) {
    return with_key(awq_quantization_config(64), key, value);
  };
  for (const auto& [q, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {nullptr,
            "has model.layers.0.self_attn.q_proj.qweight (AWQ or GPTQ) in place of "
            "model.layers.0.self_attn.q_proj.weight but config.json's quantization_config describes neither"},
           {config_with("bits", 8), "quantization_config.bits is 8: qinfer reads AWQ weights of 4 bits"},
           {config_with("version", "gemv"), "quantization_config.version is \"gemv\": qinfer reads AWQ's GEMM layout"},
           {config_with("zero_point", false), "quantization_config.zero_point is false"},
           {config_with("quant_method", "compressed-tensors"),
            "quantization_config.quant_method is \"compressed-tensors\": qinfer reads the methods \"fp8\""},
           {config_with("group_size", kGone), "quantization_config.group_size is missing"},
           {config_with("group_size", 48),
            "model.layers.0.self_attn.q_proj.qweight: 64 inputs are not whole AWQ groups of 48"}}) {
    test::ScratchDir dir("awq-config");
    write_checkpoint(dir, ts, q);
    EXPECT_NE(load_error(dir.path()).find(want), std::string::npos) << load_error(dir.path());
  }
}

TEST(AwqCheckpoint, MissingMisshapenOrMistypedTensorsAreNamed) {
  const std::string v = "model.layers.1.self_attn.v_proj";
  auto with = [&](const std::function<void(std::vector<TensorData>&)>& edit) {
    auto ts = awq_group_tensors(fixture_tensors("tiny"), 64);
    edit(ts);
    auto dir = std::make_unique<test::ScratchDir>("awq-tensors");
    write_checkpoint(*dir, ts, awq_quantization_config(64));
    return load_error(dir->path());
  };
  const std::string missing = with([&](std::vector<TensorData>& ts) {
    std::erase_if(ts, [&](const TensorData& t) { return t.name == v + ".qzeros"; });
  });
  EXPECT_NE(missing.find("missing tensor '" + v + ".qzeros' (expected shape [1, 8])"), std::string::npos) << missing;
  const std::string misshapen = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == v + ".qweight") t = {t.name, DType::I32, {64, 4}, std::vector<uint8_t>(64 * 4 * 4)};
  });
  EXPECT_NE(misshapen.find("tensor '" + v + ".qweight' has shape [64, 4], the config implies [64, 8]"),
            std::string::npos)
      << misshapen;
  const std::string mistyped = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == v + ".qweight") t.dtype = DType::F32;
  });
  EXPECT_NE(mistyped.find("tensor " + v + ".qweight is F32; AWQ packs it in I32"), std::string::npos) << mistyped;
  const std::string scales = with([&](std::vector<TensorData>& ts) {
    for (TensorData& t : ts)
      if (t.name == v + ".scales") t = {t.name, DType::I32, t.shape, std::vector<uint8_t>(t.bytes.size() * 2)};
  });
  EXPECT_NE(scales.find("tensor " + v + ".scales is I32; scales are F32, BF16 or F16"), std::string::npos) << scales;
}

namespace {

// The weights GPTQ's tensors for `base` define, unpacked as AutoGPTQ does
// (field k of word j holds input per j + k; zeros stored minus one; g_idx
// names each input's group): (code - zero) x scale.
std::vector<float> gptq_weights(const std::vector<TensorData>& ts, const std::string& base, int bits) {
  const TensorData &qweight = named(ts, base + ".qweight"), &qzeros = named(ts, base + ".qzeros"),
                   &scales = named(ts, base + ".scales"), &g_idx = named(ts, base + ".g_idx");
  const int64_t per = 32 / bits, rows = qweight.shape[1], cols = qweight.shape[0] * per;
  auto field = [&](const TensorData& t, int64_t word, int64_t k) {
    uint32_t w;
    std::memcpy(&w, &t.bytes[4 * word], 4);
    return static_cast<int32_t>((w >> (bits * k)) & ((1u << bits) - 1));
  };
  std::vector<float> w(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) {
      int32_t g;
      std::memcpy(&g, &g_idx.bytes[4 * i], 4);
      const int32_t code = field(qweight, (i / per) * rows + r, i % per);
      const int32_t zero = field(qzeros, g * (rows / per) + r / per, r % per) + 1;
      w[r * cols + i] = static_cast<float>(code - zero) * element(scales, g * rows + r);
    }
  return w;
}

// Every projection's g_idx interleaved (input i in group i mod groups), as
// desc_act leaves groups scattered over the inputs.
void scatter_groups(std::vector<TensorData>& ts) {
  for (TensorData& t : ts)
    if (t.name.ends_with(".g_idx")) {
      const int64_t cols = t.shape[0], groups = named(ts, t.name.substr(0, t.name.size() - 5) + "scales").shape[0];
      for (int64_t i = 0; i < cols; ++i) {
        const auto g = static_cast<int32_t>(i % groups);
        std::memcpy(&t.bytes[4 * i], &g, 4);
      }
    }
}

}  // namespace

// As stored, a projection is (code - zero) x scale in the config's
// torch_dtype; with --weights f32 the product itself; 4 and 8 bits, groups
// in order or scattered by g_idx.
TEST(GptqCheckpoint, ProjectionsAreCodeMinusZeroTimesScale) {
  for (const auto& [bits, scattered] : {std::pair{4, false}, {8, false}, {4, true}}) {
    std::vector<TensorData> ts = gptq_group_tensors(fixture_tensors("tiny"), 64, bits);
    if (scattered) scatter_groups(ts);
    test::ScratchDir dir("gptq");
    nlohmann::json q = gptq_quantization_config(64, bits);
    q["desc_act"] = scattered;
    write_checkpoint(dir, ts, q);
    LoadOptions f32;
    f32.weights = WeightFormat::F32;
    const auto as_stored = Qwen3Model::load(dir.path()), widened = Qwen3Model::load(dir.path(), f32);
    for (int64_t l = 0; l < 2; ++l)
      for (const std::string p : kProjections) {
        const std::string base = "model.layers." + std::to_string(l) + "." + p;
        const std::vector<float> want = gptq_weights(ts, base, bits);
        const WeightMatrix& m = projection(*as_stored, l, p);
        ASSERT_EQ(m.format, WeightFormat::BF16) << base;  // the fixture's torch_dtype
        const std::vector<float> got = loaded_weights(m), got32 = loaded_weights(projection(*widened, l, p));
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i], bf16_to_f32(f32_to_bf16(want[i]))) << base << " " << i << " bits " << bits;
          ASSERT_EQ(got32[i], want[i]) << base << " " << i << " bits " << bits;
        }
      }
  }
}

// 8-bit codes follow the exact model like Q8 (measured: clear top-1 99.2 %,
// KL 0.015, rms 0.23); 4-bit ones behave like AWQ's above (measured: rms 3.5,
// KL 3.4), their exact weights tested above.
TEST(GptqCheckpoint, Int8FollowsTheExactModelLikeQ8) {
  test::ScratchDir dir("gptq-quality");
  write_checkpoint(dir, gptq_group_tensors(fixture_tensors("tiny"), 64, 8), gptq_quantization_config(64, 8));
  const Agreement a = agreement_with_tiny("gptq int8", dir.path(), false);
  EXPECT_GE(a.with_exact.clear_top1(), 0.99);
  EXPECT_LT(a.with_exact.mean_kl(), 0.05);
}

TEST(GptqCheckpoint, ConfigsAndTensorsItCannotReadAreRefused) {
  const auto ts = gptq_group_tensors(fixture_tensors("tiny"), 64, 4);
  auto config_with = [](const char* key, const nlohmann::json& value) {
    return with_key(gptq_quantization_config(64, 4), key, value);
  };
  for (const auto& [q, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {config_with("bits", 3), "quantization_config.bits is 3: qinfer reads GPTQ weights of 4 or 8 bits"},
           {config_with("checkpoint_format", "gptq_v2"), "quantization_config.checkpoint_format is \"gptq_v2\""},
           {config_with("group_size", 0), "quantization_config.group_size is 0"},
           {config_with("group_size", 128),
            "tensor 'model.layers.0.self_attn.o_proj.qzeros' has shape [2, 8], the config implies [1, 8]"}}) {
    test::ScratchDir dir("gptq-config");
    write_checkpoint(dir, ts, q);
    EXPECT_NE(load_error(dir.path()).find(want), std::string::npos) << load_error(dir.path());
  }
  auto bad_g_idx = ts;
  for (TensorData& t : bad_g_idx)
    if (t.name == "model.layers.1.mlp.up_proj.g_idx") {
      const int32_t g = 5;
      std::memcpy(&t.bytes[4 * 10], &g, 4);
    }
  test::ScratchDir dir("gptq-gidx");
  write_checkpoint(dir, bad_g_idx, gptq_quantization_config(64, 4));
  EXPECT_NE(load_error(dir.path())
                .find("tensor model.layers.1.mlp.up_proj.g_idx puts input 10 in group 5; the scales have 1 groups"),
            std::string::npos)
      << load_error(dir.path());
}
