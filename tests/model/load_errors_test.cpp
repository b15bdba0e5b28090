// A checkpoint that does not match its config is refused with a message naming the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "load_error.h"
#include "model/published_formats.h"
#include "model/qwen3.h"
#include "model/test_model.h"
#include "sequence_classifier.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using test::load_error;
namespace fs = std::filesystem;

namespace {

// A minimal valid Qwen3 checkpoint (1 layer, tiny shapes, f32 zeros) in dir.
const char* kConfig = R"({"architectures":["Qwen3ForCausalLM"],"vocab_size":10,"hidden_size":8,"intermediate_size":12,
  "num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"tie_word_embeddings":true,"max_position_embeddings":4})";

std::vector<TensorData> tiny_tensors() {
  auto t = [](std::string name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return TensorData{std::move(name), DType::F32, std::move(shape), std::vector<uint8_t>(n * 4)};
  };
  const std::string p = "model.layers.0.";
  return {t("model.embed_tokens.weight", {10, 8}),
          t(p + "input_layernorm.weight", {8}),
          t(p + "self_attn.q_proj.weight", {8, 8}),
          t(p + "self_attn.k_proj.weight", {4, 8}),
          t(p + "self_attn.v_proj.weight", {4, 8}),
          t(p + "self_attn.o_proj.weight", {8, 8}),
          t(p + "self_attn.q_norm.weight", {4}),
          t(p + "self_attn.k_norm.weight", {4}),
          t(p + "post_attention_layernorm.weight", {8}),
          t(p + "mlp.gate_proj.weight", {12, 8}),
          t(p + "mlp.up_proj.weight", {12, 8}),
          t(p + "mlp.down_proj.weight", {8, 12}),
          t("model.norm.weight", {8})};
}

// The minimal checkpoint in d, its config.json with `from` replaced by `to`.
void write_checkpoint(const test::ScratchDir& d, const std::string& from = "", const std::string& to = "") {
  std::string cfg = kConfig;
  if (!from.empty()) cfg.replace(cfg.find(from), from.size(), to);
  std::ofstream(d.file("config.json")) << cfg;
  write_safetensors(d.file("model.safetensors"), tiny_tensors());
}

}  // namespace

TEST(ModelLoad, MinimalCheckpointLoads) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  write_safetensors(d.file("model.safetensors"), tiny_tensors());
  auto m = Qwen3Model::load(d.path());
  EXPECT_EQ(m->config().hidden_size, 8);
}

// A hunt finding: a checkpoint's tensors the model does not read (a Qwen2-MoE's
// shared expert, a bias) were dropped without a word; they are named
// (model_bundle warns of them, as transformers does). Every checkpoint qinfer
// writes or reads in full has none.
TEST(ModelLoad, TensorsTheModelDoesNotReadAreNamed) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  auto ts = tiny_tensors();
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_TRUE(Qwen3Model::load(d.path())->unused_tensors().empty());
  ts.push_back(ts[2]);
  ts.back().name = "model.layers.0.mlp.shared_expert_gate.weight";
  ts.push_back(ts[2]);
  ts.back().name = "model.layers.0.self_attn.q_proj.bias";
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_EQ(Qwen3Model::load(d.path())->unused_tensors(),
            (std::vector<std::string>{"model.layers.0.mlp.shared_expert_gate.weight",
                                      "model.layers.0.self_attn.q_proj.bias"}));
  for (const char* preset : {"tiny", "tiny-moe"})
    for (const DType dtype : {DType::BF16, DType::F32}) {
      test::ScratchDir w("m-written");
      write_test_model(w.path(), test_model_preset(preset), dtype, 3);
      EXPECT_TRUE(Qwen3Model::load(w.path())->unused_tensors().empty()) << preset;
      for (const PublishedFormat format : {PublishedFormat::Fp8, PublishedFormat::Awq, PublishedFormat::Gptq}) {
        test::ScratchDir p("m-published");
        write_test_model(p.path(), test_model_preset(preset), dtype == DType::F32 ? DType::F16 : dtype, 3);
        rewrite_checkpoint_as(p.path(), format);
        const auto m = Qwen3Model::load(p.path());
        EXPECT_TRUE(m->unused_tensors().empty()) << preset << " " << static_cast<int>(format) << " "
                                                 << (m->unused_tensors().empty() ? "" : m->unused_tensors()[0]);
      }
    }
  for (const char* fixture : {"models/tiny", "models/tiny2"})
    EXPECT_TRUE(Qwen3Model::load(test::data_path(fixture))->unused_tensors().empty()) << fixture;
  // Experts stacked in one tensor are named as such (a hunt finding: blamed on num_experts).
  {
    test::ScratchDir m("m-fused");
    Qwen3Config moe = test_model_preset("tiny-moe");
    write_test_model(m.path(), moe, DType::BF16, 3);
    std::vector<TensorData> fused;
    {
      const SafetensorsFile f(m.file("model.safetensors"));
      for (const auto& [name, t] : f.tensors())
        if (name.find(".mlp.experts.") == std::string::npos)
          fused.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
        else if (name.find(".mlp.experts.0.gate_proj") != std::string::npos)
          fused.push_back({name.substr(0, name.find(".mlp.experts.")) + ".mlp.experts.gate_up_proj", t.dtype, t.shape,
                           std::vector<uint8_t>(t.data, t.data + t.nbytes)});
    }
    write_safetensors(m.file("model.safetensors"), fused);
    EXPECT_NE(load_error(m.path()).find("the experts are stacked in one tensor"), std::string::npos)
        << load_error(m.path());
  }
  for (const bool tied : {true, false}) {
    test::ScratchDir c("m-classifier");
    test::write_sequence_classifier(c.path(), tied);
    EXPECT_TRUE(Qwen3Model::load(c.path())->unused_tensors().empty()) << tied;
  }
}

TEST(ModelLoad, MissingTensor) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  auto ts = tiny_tensors();
  ts.erase(ts.begin() + 3);  // k_proj
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_NE(load_error(d.path()).find("missing tensor 'model.layers.0.self_attn.k_proj.weight'"), std::string::npos)
      << load_error(d.path());
}

TEST(ModelLoad, WrongShape) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  auto ts = tiny_tensors();
  ts[9].shape = {8, 12};  // gate_proj transposed
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_NE(
      load_error(d.path()).find("'model.layers.0.mlp.gate_proj.weight' has shape [8, 12], the config implies [12, 8]"),
      std::string::npos)
      << load_error(d.path());
}

// A hunt finding: num_hidden_layers 10^12 sized the layer tables before any
// tensor was looked at (std::bad_alloc, "internal error").
TEST(ModelLoad, MoreLayersThanTheCheckpointHas) {
  test::ScratchDir d("m");
  write_checkpoint(d, "\"num_hidden_layers\":1", "\"num_hidden_layers\":1000000000000");
  EXPECT_NE(load_error(d.path()).find("'num_hidden_layers' = 1000000000000 is beyond any model's"), std::string::npos)
      << load_error(d.path());
  write_checkpoint(d, "\"num_hidden_layers\":1", "\"num_hidden_layers\":1000000");
  EXPECT_NE(load_error(d.path()).find("num_hidden_layers is 1000000 but the checkpoint has no "
                                      "model.layers.999999.input_layernorm.weight"),
            std::string::npos)
      << load_error(d.path());
}

// A hunt finding: a config with fewer layers than the checkpoint loaded the
// first ones only and ran another model, silently.
TEST(ModelLoad, FewerLayersThanTheCheckpointHas) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  auto ts = tiny_tensors();
  const size_t n = ts.size();
  for (size_t i = 0; i < n; ++i)
    if (ts[i].name.rfind("model.layers.0.", 0) == 0) {
      TensorData copy = ts[i];
      copy.name.replace(13, 1, "1");
      ts.push_back(std::move(copy));
    }
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_NE(load_error(d.path()).find("num_hidden_layers is 1 but the checkpoint has more layers "
                                      "(model.layers.1.input_layernorm.weight)"),
            std::string::npos)
      << load_error(d.path());
}

// A hunt finding: a quantization_config field of the wrong type was an
// "internal error: [json.exception.type_error.302]" naming neither file nor field.
TEST(ModelLoad, QuantizationConfigOfTheWrongTypeIsNamed) {
  test::ScratchDir d("m");
  for (const auto& [q, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"quant_method": "qinfer", "format": 8, "version": 3})", "quantization_config.format is 8"},
           {R"({"quant_method": "qinfer", "format": "q8", "version": "3"})",
            "quantization_config.version is \"3\": expected an integer"}}) {
    std::string cfg = kConfig;
    cfg.insert(cfg.size() - 1, ",\"quantization_config\":" + q);
    std::ofstream(d.file("config.json")) << cfg;
    write_safetensors(d.file("model.safetensors"), tiny_tensors());
    EXPECT_NE(load_error(d.path()).find(message), std::string::npos) << load_error(d.path());
    EXPECT_NE(load_error(d.path()).find("config.json"), std::string::npos) << load_error(d.path());
  }
}

// A hunt finding: max_position_embeddings 2^63 - 1 wrapped the KV cache's
// block count negative ("a KV pool of -72057594037927936 blocks").
TEST(ModelLoad, AContextBeyondTheAddressSpaceIsRefusedWhenTheCacheIsMade) {
  test::ScratchDir d("m");
  write_checkpoint(d, "\"max_position_embeddings\":4", "\"max_position_embeddings\":9223372036854775807");
  const auto m = Qwen3Model::load(d.path());
  try {
    m->make_cache();
    FAIL() << "made a cache of 2^63 positions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a KV pool of 72057594037927936 blocks of 128 positions is larger than"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelLoad, UntiedNeedsLmHead) {
  test::ScratchDir d("m");
  write_checkpoint(d, "\"tie_word_embeddings\":true", "\"tie_word_embeddings\":false");
  EXPECT_NE(load_error(d.path()).find("missing tensor 'lm_head.weight'"), std::string::npos) << load_error(d.path());
}

// A Qwen3Model backbone saved alone (sentence-transformers' Qwen3-Embedding):
// tensors without "model.", no lm_head.weight. Tied, the embedding is the
// lm_head; untied, the model gives hidden states and refuses logits.
TEST(ModelLoad, BackboneWithoutLmHeadEmbedsButGivesNoLogits) {
  auto backbone_tensors = [] {
    std::vector<TensorData> ts = tiny_tensors();
    for (TensorData& t : ts) t.name.erase(0, std::string("model.").size());
    for (TensorData& t : ts)  // distinct values, so a tensor bound to the wrong name changes the result
      for (size_t i = 0; i < t.bytes.size(); i += 4) {
        const float x = 0.01f * static_cast<float>((i / 4 + t.name.size()) % 17) + 0.5f;
        std::memcpy(&t.bytes[i], &x, 4);
      }
    return ts;
  };
  test::ScratchDir tied("tied"), untied("untied"), causal("causal");
  std::string cfg = kConfig;
  std::ofstream(tied.file("config.json")) << cfg;
  write_safetensors(tied.file("model.safetensors"), backbone_tensors());
  cfg.replace(cfg.find("\"tie_word_embeddings\":true"), 26, "\"tie_word_embeddings\":false");
  std::ofstream(untied.file("config.json")) << cfg;
  write_safetensors(untied.file("model.safetensors"), backbone_tensors());
  std::ofstream(causal.file("config.json")) << kConfig;
  std::vector<TensorData> prefixed = backbone_tensors();
  for (TensorData& t : prefixed) t.name.insert(0, "model.");
  write_safetensors(causal.file("model.safetensors"), prefixed);

  auto hidden_of = [](const Qwen3Model& m, BatchSeq::Logits what) {
    ThreadPool pool(1);
    ForwardState st;
    KvCache cache = m.make_cache();
    cache.ensure(3);
    Batch b{{1, 2, 3}, {{3, 0, cache.table(), what}}};
    forward(m, b, cache.pool(), st, pool);
    return st.hidden;
  };
  auto as_causal = Qwen3Model::load(causal.path());
  auto as_tied = Qwen3Model::load(tied.path());
  auto as_untied = Qwen3Model::load(untied.path());
  EXPECT_EQ(as_tied->layout().prefix, "");
  EXPECT_TRUE(as_tied->has_lm_head());
  EXPECT_FALSE(as_untied->has_lm_head());
  EXPECT_TRUE(as_causal->has_lm_head());
  const std::vector<float> reference = hidden_of(*as_causal, BatchSeq::Logits::Hidden);
  ASSERT_EQ(reference.size(), 8u);
  EXPECT_EQ(hidden_of(*as_tied, BatchSeq::Logits::Hidden), reference);
  EXPECT_EQ(hidden_of(*as_untied, BatchSeq::Logits::Hidden), reference);
  try {
    hidden_of(*as_untied, BatchSeq::Logits::Last);
    ADD_FAILURE() << "logits of a model without lm_head";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no lm_head.weight"), std::string::npos) << e.what();
  }
}

TEST(ModelLoad, UnknownArchitecture) {
  test::ScratchDir d("m");
  write_checkpoint(d, "Qwen3ForCausalLM", "MistralForCausalLM");
  EXPECT_NE(load_error(d.path()).find("architecture 'MistralForCausalLM' is not supported"), std::string::npos);
}

TEST(ModelLoad, MissingConfigJson) {
  test::ScratchDir d("m");
  write_safetensors(d.file("model.safetensors"), tiny_tensors());
  EXPECT_NE(load_error(d.path()).find("config.json not found"), std::string::npos) << load_error(d.path());
}

TEST(ModelLoad, TokenOutsideVocabularyIsAnError) {
  test::ScratchDir d("m");
  std::ofstream(d.file("config.json")) << kConfig;
  write_safetensors(d.file("model.safetensors"), tiny_tensors());
  auto m = Qwen3Model::load(d.path());
  ThreadPool pool(1);
  ForwardState st;
  KvCache cache = m->make_cache();
  const int32_t bad = 10;
  try {
    forward(*m, std::span(&bad, 1), 0, cache, st, pool);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 10 is outside the vocabulary"), std::string::npos);
  }
  const int32_t ok[2] = {1, 2};
  try {
    forward(*m, ok, 3, cache, st, pool);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 5 positions but the context length is 4"), std::string::npos)
        << e.what();
  }
}

// Audit findings: a classifier whose id2label names more labels than
// score.weight has rows named each input's label by another row; an I32
// matrix was "dtype I32 is not a float weight format", naming no tensor; an
// index with an empty weight_map was blamed on num_hidden_layers; an empty
// tensor at the start of the data section "overlapped" the tensor there.
TEST(ModelLoad, FilesThatDisagreeAreNamed) {
  test::ScratchDir d("m");
  std::string classifier = kConfig;
  classifier.replace(classifier.find("Qwen3ForCausalLM"), 16, "Qwen3ForSequenceClassification");
  classifier.insert(classifier.size() - 1, R"(,"id2label":{"0":"NEG","1":"NEU","2":"POS"})");
  std::ofstream(d.file("config.json")) << classifier;
  auto ts = tiny_tensors();
  ts.push_back({"score.weight", DType::F32, {2, 8}, std::vector<uint8_t>(64)});
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_NE(load_error(d.path()).find("/config.json: id2label names 3 labels but score.weight has 2 rows"),
            std::string::npos)
      << load_error(d.path());

  std::ofstream(d.file("config.json")) << kConfig;
  ts = tiny_tensors();
  ts[2].dtype = DType::I32;  // q_proj, 4 bytes an element as F32
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_NE(load_error(d.path()).find("tensor model.layers.0.self_attn.q_proj.weight is I32; a weight matrix is F32"),
            std::string::npos)
      << load_error(d.path());

  ts = tiny_tensors();
  ts.insert(ts.begin(), {"aaa.empty", DType::BF16, {0}, {}});
  write_safetensors(d.file("model.safetensors"), ts);
  EXPECT_EQ(load_error(d.path()), "(no error)") << "an empty tensor takes no bytes from the one after it";

  fs::remove(d.file("model.safetensors"));
  std::ofstream(d.file("model.safetensors.index.json")) << R"({"metadata": {}, "weight_map": {}})";
  EXPECT_NE(load_error(d.path()).find("model.safetensors.index.json: the 'weight_map' lists no tensors"),
            std::string::npos)
      << load_error(d.path());
}
