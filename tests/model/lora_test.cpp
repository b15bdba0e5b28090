// PEFT LoRA adapters (--lora): the adapted model computes what the base
// model with each target weight replaced by W + scaling·B·A computes (PEFT's
// merge, done here in double and stored as f32), with PEFT's scalings
// (alpha / r, alpha / sqrt(r) under rsLoRA, rank_pattern and alpha_pattern
// per module); several adapters add up; and every adapter PEFT would run
// otherwise, or not at all, is refused with the file and the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/qwen3.h"
#include "model/test_model.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

namespace {

std::vector<float> all_logits(const Qwen3Model& model, const std::vector<int32_t>& ids) {
  ThreadPool pool(2);
  ForwardState st;
  KvCache cache = model.make_cache();
  auto out = forward(model, ids, 0, cache, st, pool, true);
  return {out.begin(), out.end()};
}

const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 151644, 872, 198, 3838, 374, 220, 17, 10};

// The tiny fixture's weights with every adapted projection merged: W +
// sum over adapters of scale(module) · B·A, in double, stored as F32.
struct MergedAdapter {
  std::string dir;
  std::function<double(const std::string& module)> scale;
};
void write_merged(const std::string& out, const std::string& base, const std::vector<MergedAdapter>& adapters) {
  std::filesystem::create_directories(out);
  std::filesystem::copy_file(base + "/config.json", out + "/config.json");
  const SafetensorsFile model(base + "/model.safetensors");
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  for (const MergedAdapter& a : adapters)
    files.push_back(std::make_unique<SafetensorsFile>(a.dir + "/adapter_model.safetensors"));
  std::vector<TensorData> ts;
  for (const auto& [name, t] : model.tensors()) {
    const std::string module = name.substr(0, name.size() - std::string(".weight").size());
    std::vector<double> w(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < w.size(); ++i) w[i] = load_as_f32(t.data, t.dtype, i);
    bool adapted = false;
    for (size_t k = 0; k < adapters.size(); ++k) {
      const auto& tensors = files[k]->tensors();
      const auto A = tensors.find("base_model.model." + module + ".lora_A.weight");
      if (A == tensors.end()) continue;
      const TensorView& B = tensors.at("base_model.model." + module + ".lora_B.weight");
      const int64_t out_dim = t.shape[0], in = t.shape[1], r = A->second.shape[0];
      const double s = adapters[k].scale(module);
      for (int64_t o = 0; o < out_dim; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double sum = 0;
          for (int64_t j = 0; j < r; ++j)
            sum += double(load_as_f32(B.data, B.dtype, o * r + j)) *
                   load_as_f32(A->second.data, A->second.dtype, j * in + i);
          w[o * in + i] += s * sum;
        }
      adapted = true;
    }
    TensorData d{name, adapted ? DType::F32 : t.dtype, t.shape, {}};
    d.bytes.resize(static_cast<size_t>(t.numel()) * dtype_size(d.dtype));
    for (size_t i = 0; i < w.size(); ++i) set_element(d, static_cast<int64_t>(i), static_cast<float>(w[i]));
    ts.push_back(std::move(d));
  }
  write_safetensors(out + "/model.safetensors", ts);
}

TEST(Lora, AdaptersComputeWhatTheirMergedWeightsCompute) {
  const std::string tiny = test::data_path("models/tiny");
  auto base = Qwen3Model::load(tiny);
  test::ScratchDir dir("lora-merge");
  // Two adapters: q and v at rank 4 (alpha 8: scaling 2), bf16; and every
  // projection at rank 8 under rsLoRA (alpha 16 / sqrt 8) but k_proj at
  // rank 2 and layer 1's down_proj at alpha 3, f32.
  TestLoraAdapter first;
  first.lora.r = 4;
  first.lora.lora_alpha = 8;
  first.targets = {"q_proj", "v_proj"};
  write_test_lora_adapter(dir.file("first"), base->config(), first, 1);
  TestLoraAdapter second;
  second.lora.r = 8;
  second.lora.lora_alpha = 16;
  second.lora.use_rslora = true;
  second.lora.rank_pattern = {{"k_proj", 2}};
  second.lora.alpha_pattern = {{"layers\\.1\\.mlp\\.down_proj", 3}};
  second.dtype = DType::F32;
  write_test_lora_adapter(dir.file("second"), base->config(), second, 2);
  const auto second_scale = [](const std::string& module) {
    if (module.ends_with("k_proj")) return 16 / std::sqrt(2.0);
    if (module == "model.layers.1.mlp.down_proj") return 3 / std::sqrt(8.0);
    return 16 / std::sqrt(8.0);
  };
  write_merged(dir.file("merged"), tiny,
               {{dir.file("first"), [](const std::string&) { return 2.0; }}, {dir.file("second"), second_scale}});
  auto merged = Qwen3Model::load(dir.file("merged"));

  LoadOptions both;
  both.lora_adapters = {dir.file("first"), dir.file("second")};
  auto adapted = Qwen3Model::load(tiny, both);
  // The first's B times 2 is exactly bf16: kept so (half the bytes); the second's scaling is not a power of two.
  const std::vector<LoraDelta>& q_updates = adapted->weights().layers[0].lora.q_proj;
  ASSERT_EQ(q_updates.size(), 2u);
  EXPECT_EQ(q_updates[0].b().format, WeightFormat::BF16);
  EXPECT_EQ(q_updates[1].b().format, WeightFormat::F32);
  const std::vector<float> want = all_logits(*merged, kPrompt), got = all_logits(*adapted, kPrompt);
  EXPECT_LE(test::max_abs_diff(got, want), 1e-4f);
  // The adapters change the logits far beyond that: the test would see a lost update or scaling.
  EXPECT_GT(test::max_abs_diff(all_logits(*base, kPrompt), want), 1e-2f);

  // Each alone is not the two together: both are applied.
  LoadOptions one;
  one.lora_adapters = {dir.file("second")};
  EXPECT_GT(test::max_abs_diff(all_logits(*Qwen3Model::load(tiny, one), kPrompt), want), 1e-3f);
}

// Named adapters (vLLM's --lora-modules): in one batch, each sequence takes
// the adapter it names, after those every sequence takes, and gets the bits
// of the model loaded with exactly those adapters for every request.
TEST(Lora, NamedAdaptersGoToTheSequencesThatNameThem) {
  const std::string tiny = test::data_path("models/tiny");
  const Qwen3Config config = load_qwen3_config(tiny + "/config.json");
  test::ScratchDir dir("lora-named");
  TestLoraAdapter everyone;
  everyone.targets = {"q_proj", "v_proj"};
  write_test_lora_adapter(dir.file("g"), config, everyone, 1);
  write_test_lora_adapter(dir.file("a"), config, {}, 2);
  write_test_lora_adapter(dir.file("b"), config, {}, 3);
  LoadOptions named;
  named.lora_adapters = {dir.file("g")};
  named.lora_modules = {{"alpha", dir.file("a")}, {"beta", dir.file("b")}};
  auto model = Qwen3Model::load(tiny, named);
  ASSERT_EQ(model->adapter_names().size(), 2u);
  EXPECT_EQ(model->adapter_names()[1].name, "beta");
  EXPECT_EQ(model->find_adapter("alpha"), 0);
  std::vector<std::vector<float>> want;  // per sequence: none, alpha, beta, alpha
  for (const std::vector<std::string>& dirs : std::vector<std::vector<std::string>>{
           {dir.file("g")}, {dir.file("g"), dir.file("a")}, {dir.file("g"), dir.file("b")}}) {
    LoadOptions o;
    o.lora_adapters = dirs;
    want.push_back(all_logits(*Qwen3Model::load(tiny, o), kPrompt));
  }
  want.push_back(want[1]);
  const int32_t adapter[] = {-1, 0, 1, 0};
  const int64_t n = static_cast<int64_t>(kPrompt.size()), block = 4, per_seq = (n + block - 1) / block;
  KvPool kv(config.num_hidden_layers, config.num_key_value_heads, config.head_dim, 4 * per_seq, block);
  std::vector<std::vector<int32_t>> tables(4);
  Batch batch;
  for (size_t i = 0; i < 4; ++i) {
    for (int64_t b = 0; b < per_seq; ++b) tables[i].push_back(static_cast<int32_t>(i * per_seq + b));
    batch.tokens.insert(batch.tokens.end(), kPrompt.begin(), kPrompt.end());
    batch.seqs.push_back({n, 0, tables[i], BatchSeq::Logits::All, adapter[i]});
  }
  ThreadPool pool(2);
  ForwardState st;
  const std::span<const float> got = forward(*model, batch, kv, st, pool);
  const size_t per_seq_logits = want[0].size();
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(std::memcmp(&got[i * per_seq_logits], want[i].data(), per_seq_logits * sizeof(float)), 0)
        << "sequence " << i << " (adapter " << adapter[i] << ")";
  EXPECT_GT(test::max_abs_diff(want[1], want[2]), 1e-2f);  // the adapters differ: a mix-up would show

  batch.seqs[0].adapter = 2;
  try {
    forward(*model, batch, kv, st, pool);
    FAIL() << "adapter 2 of 2 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LoRA adapter 2 does not exist: the model has 2 named adapters"),
              std::string::npos)
        << e.what();
  }
  for (const auto& [modules, message] : std::vector<std::pair<std::vector<NamedLoraAdapter>, std::string>>{
           {{{"", dir.file("a")}}, "a LoRA adapter needs a name"},
           {{{"x", dir.file("a")}, {"x", dir.file("b")}}, "a LoRA adapter named 'x' is already loaded"},
           // A hunt finding: "" read /adapter_model.safetensors, the file system's root.
           {{{"x", ""}}, "the LoRA adapter's directory is empty"}}) {
    LoadOptions o;
    o.lora_modules = modules;
    try {
      Qwen3Model::load(tiny, o);
      FAIL() << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// Adapters added to a loaded model (the server's /v1/load_lora_adapter) run
// as adapters loaded with it; one dropped frees its bytes, is refused from
// then on, and its index is never given again.
TEST(Lora, AdaptersAddedAndDroppedAtRunTime) {
  const std::string tiny = test::data_path("models/tiny");
  const Qwen3Config config = load_qwen3_config(tiny + "/config.json");
  test::ScratchDir dir("lora-runtime");
  write_test_lora_adapter(dir.file("a"), config, {}, 2);
  LoadOptions with_a;
  with_a.lora_adapters = {dir.file("a")};
  const std::vector<float> want = all_logits(*Qwen3Model::load(tiny, with_a), kPrompt);

  auto model = Qwen3Model::load(tiny);
  const size_t base_bytes = model->weight_bytes();
  const std::vector<float> base = all_logits(*model, kPrompt);
  // A hunt finding: B was in std::vectors, kept by glibc in the reading (HTTP) thread's arena when freed, so a
  // server's RSS grew with every load and unload. All of an adapter's bytes are in its own pages.
  Qwen3Model::ReadAdapter read = model->read_adapter(dir.file("a"));
  const auto owned = [&](const void* p) {
    return std::any_of(read.owned.begin(), read.owned.end(), [&](const OwnedBytes& o) {
      return p >= static_cast<const void*>(o.data()) && p < static_cast<const void*>(o.data() + o.size());
    });
  };
  int deltas = 0;
  for (const LoraLayer& layer : read.layers)
    for (const LoraProjection& p : lora_projections(config))
      for (const LoraDelta& d : layer.*p.deltas) {
        EXPECT_TRUE(owned(d.a.data) && owned(d.b_data)) << p.module;
        ++deltas;
      }
  EXPECT_GT(deltas, 0);
  EXPECT_EQ(model->add_adapter("alpha", std::move(read)), 0);
  EXPECT_GT(model->weight_bytes(), base_bytes);
  EXPECT_EQ(model->find_adapter("alpha"), 0);
  const int64_t n = static_cast<int64_t>(kPrompt.size());
  KvPool kv(config.num_hidden_layers, config.num_key_value_heads, config.head_dim, 2 * n, 1);
  std::vector<int32_t> table(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  Batch batch;
  batch.tokens = kPrompt;
  batch.seqs.push_back({n, 0, table, BatchSeq::Logits::All, 0});
  ThreadPool pool(2);
  ForwardState st;
  const std::span<const float> got = forward(*model, batch, kv, st, pool);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  EXPECT_EQ(all_logits(*model, kPrompt), base);  // a row without it does not take it

  try {
    model->add_adapter("alpha", model->read_adapter(dir.file("a")));
    FAIL() << "two adapters named alpha";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a LoRA adapter named 'alpha' is already loaded"), std::string::npos);
  }
  EXPECT_EQ(model->unlist_adapter("alpha"), 0);
  EXPECT_EQ(model->unlist_adapter("alpha"), std::nullopt);
  EXPECT_EQ(model->find_adapter("alpha"), std::nullopt);
  model->check_adapter(0);  // unlisted, its updates still in: the requests running with it go on
  model->drop_adapter(0);
  EXPECT_EQ(model->weight_bytes(), base_bytes);
  try {
    forward(*model, batch, kv, st, pool);
    FAIL() << "a dropped adapter ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LoRA adapter 'alpha' was unloaded"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model->add_adapter("alpha", model->read_adapter(dir.file("a"))), 1);
  batch.seqs[0].adapter = 1;
  const std::span<const float> again = forward(*model, batch, kv, st, pool);
  EXPECT_EQ(std::memcmp(again.data(), want.data(), want.size() * sizeof(float)), 0);
  ASSERT_EQ(model->adapter_names().size(), 2u);
  EXPECT_FALSE(model->adapter_names()[0].listed);
  EXPECT_TRUE(model->adapter_names()[1].listed);
  EXPECT_THROW(model->read_adapter(dir.file("missing")), Error);
}

TEST(Lora, QuantizedBaseWeightsTakeTheSameUpdate) {
  // The update adds to a q8 base's output as it does to bf16's: the
  // difference a small adapter (scaling 1/8) makes is the same up to the
  // base's rounding. (A random model of the make-test-model kind: in the
  // tiny fixture q8's own rounding moves the logits by 4 %, and the two
  // differences apart with it.)
  test::ScratchDir dir("lora-q8");
  const std::string tiny = dir.file("model");
  write_test_model(tiny, test_model_preset("tiny"), DType::BF16, 5);
  auto bf16 = Qwen3Model::load(tiny);
  TestLoraAdapter small;
  small.lora.lora_alpha = 1;
  write_test_lora_adapter(dir.file("a"), bf16->config(), small, 3);
  LoadOptions q8, q8_lora, bf16_lora;
  q8.weights = WeightFormat::Q8;
  q8_lora = q8;
  q8_lora.lora_adapters = bf16_lora.lora_adapters = {dir.file("a")};
  const std::vector<float> a = all_logits(*Qwen3Model::load(tiny, q8), kPrompt),
                           b = all_logits(*Qwen3Model::load(tiny, q8_lora), kPrompt), c = all_logits(*bf16, kPrompt),
                           d = all_logits(*Qwen3Model::load(tiny, bf16_lora), kPrompt);
  float effect = 0, mismatch = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    effect = std::max(effect, std::abs(d[i] - c[i]));
    mismatch = std::max(mismatch, std::abs((b[i] - a[i]) - (d[i] - c[i])));
  }
  EXPECT_GT(effect, 1e-2f);
  EXPECT_LT(mismatch, effect / 8);
}

// A mixture of experts: adapters on the attention projections run (and
// change the output); one on the dense MLP names the tensor it cannot apply,
// as a sparse layer has no dense MLP.
TEST(Lora, AMixtureTakesAttentionAdaptersAndRefusesMlpOnes) {
  test::ScratchDir dir("lora-moe");
  const Qwen3Config c = test_model_preset("tiny-moe");
  write_test_model(dir.file("model"), c, DType::BF16, 6);
  TestLoraAdapter attention;
  attention.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  write_test_lora_adapter(dir.file("attention"), c, attention, 7);
  LoadOptions o;
  o.lora_adapters = {dir.file("attention")};
  EXPECT_GT(test::max_abs_diff(all_logits(*Qwen3Model::load(dir.file("model"), o), kPrompt),
                               all_logits(*Qwen3Model::load(dir.file("model")), kPrompt)),
            1e-2f);
  write_test_lora_adapter(dir.file("mlp"), test_model_preset("tiny"), {}, 8);  // dense layers' MLP tensors
  o.lora_adapters = {dir.file("mlp")};
  try {
    Qwen3Model::load(dir.file("model"), o);
    FAIL() << "a dense MLP adapter loaded on a mixture";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.mlp.down_proj.lora_A.weight is not a LoRA update qinfer applies"),
              std::string::npos)
        << e.what();
  }
}

// An adapter written for tiny, changed by `edit`, then loaded: the Error's message.
std::string load_error(const std::function<void(const test::ScratchDir&)>& edit) {
  const std::string tiny = test::data_path("models/tiny");
  test::ScratchDir dir("lora-bad");
  write_test_lora_adapter(dir.path(), load_qwen3_config(tiny + "/config.json"), {}, 4);
  edit(dir);
  LoadOptions o;
  o.lora_adapters = {dir.path()};
  try {
    Qwen3Model::load(tiny, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

void edit_config(const test::ScratchDir& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir.file("adapter_config.json")));
  edit(j);
  std::ofstream(dir.file("adapter_config.json")) << j.dump();
}

void edit_tensors(const test::ScratchDir& dir, const std::function<void(std::vector<TensorData>&)>& edit) {
  std::vector<TensorData> ts;
  {
    const SafetensorsFile f(dir.file("adapter_model.safetensors"));
    for (const auto& [name, t] : f.tensors())
      ts.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
  }
  edit(ts);
  write_safetensors(dir.file("adapter_model.safetensors"), ts);
}

TEST(Lora, AdaptersPeftWouldRunOtherwiseAreRefusedByName) {
  const std::string q_a = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
  const std::vector<std::pair<std::string, std::function<void(const test::ScratchDir&)>>> cases = {
      {"no adapter_model.safetensors",
       [](const test::ScratchDir& d) { std::filesystem::remove(d.file("adapter_model.safetensors")); }},
      {"a pickle",
       [](const test::ScratchDir& d) {
         std::filesystem::rename(d.file("adapter_model.safetensors"), d.file("adapter_model.bin"));
       }},
      {"is not valid JSON",
       [](const test::ScratchDir& d) { std::ofstream(d.file("adapter_config.json")) << "{\"r\":"; }},
      {"peft_type is 'IA3'",
       [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["peft_type"] = "IA3"; }); }},
      {"'use_dora' is set", [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["use_dora"] = true; }); }},
      // A hunt finding: an activated LoRA ran on every token.
      {"'alora_invocation_tokens' is set: an activated LoRA applies only after its invocation tokens",
       [](const test::ScratchDir& d) {
         edit_config(d, [](auto& j) { j["alora_invocation_tokens"] = {151644, 77091}; });
       }},
      {"'modules_to_save' is set",
       [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["modules_to_save"] = {"lm_head"}; }); }},
      {"'bias' is \"some\"", [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["bias"] = "some"; }); }},
      // bias "all" trains biases Qwen3 does not have; one in the file is refused.
      {"base_model.model.model.layers.0.self_attn.q_proj.bias is not a LoRA update",
       [](const test::ScratchDir& d) {
         edit_config(d, [](auto& j) { j["bias"] = "all"; });
         edit_tensors(d, [](auto& ts) {
           ts.push_back(
               {"base_model.model.model.layers.0.self_attn.q_proj.bias", DType::F32, {4}, std::vector<uint8_t>(16)});
         });
       }},
      {"rank 16 on this model's self_attn.q_proj",
       [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["r"] = 16; }); }},
      {"'r' must be an integer rank", [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["r"] = 0; }); }},
      {"model.layers.0.self_attn.q_proj's lora_B times the adapter's scaling 1.25e+307",
       [](const test::ScratchDir& d) { edit_config(d, [](auto& j) { j["lora_alpha"] = 1e308; }); }},
      {"key 'q_proj(' is not a regular expression",
       [](const test::ScratchDir& d) { edit_config(d, [](auto& j) {
                                         j["rank_pattern"] = {{"q_proj(", 4}};
                                       }); }},
      {"base_model.model.model.embed_tokens.lora_embedding_A is not a LoRA update",
       [](const test::ScratchDir& d) {
         edit_tensors(d, [](auto& ts) {
           ts.push_back(
               {"base_model.model.model.embed_tokens.lora_embedding_A", DType::F32, {8, 4}, std::vector<uint8_t>(128)});
         });
       }},
      {q_a + " has no lora_B beside it",
       [](const test::ScratchDir& d) {
         edit_tensors(d, [](auto& ts) {
           std::erase_if(
               ts, [](const TensorData& t) { return t.name.find("0.self_attn.q_proj.lora_B") != std::string::npos; });
         });
       }},
      {q_a + " holds NaN or infinity",
       [&](const test::ScratchDir& d) {
         edit_tensors(d, [&](auto& ts) {
           for (TensorData& t : ts)
             if (t.name == q_a) set_element(t, 5, NAN);
         });
       }},
      {"I32; LoRA matrices are F32, BF16 or F16",
       [&](const test::ScratchDir& d) {
         edit_tensors(d, [&](auto& ts) {
           for (TensorData& t : ts)
             if (t.name == q_a) {
               t.dtype = DType::I32;
               t.bytes.resize(t.bytes.size() * 2);  // bf16 to 4 bytes an element
             }
         });
       }},
  };
  for (const auto& [want, edit] : cases) {
    const std::string error = load_error(edit);
    EXPECT_NE(error.find(want), std::string::npos) << "wanted '" << want << "' in: " << error;
  }
  // A hunt finding: bias "all" and "lora_only" were refused; Qwen3's projections have no biases to train, so
  // PEFT's adapter is a plain one.
  for (const char* bias : {"all", "lora_only"})
    EXPECT_EQ(load_error([&](const test::ScratchDir& d) { edit_config(d, [&](auto& j) { j["bias"] = bias; }); }),
              "(loaded)")
        << bias;
}

}  // namespace
