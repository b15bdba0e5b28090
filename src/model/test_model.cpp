#include "model/test_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "io/safetensors_writer.h"
#include "model/lora.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

Qwen3Config test_model_preset(const std::string& name) {
  if (name == "tiny-moe") {  // the tiny fixture's attention, 8 experts of which 2 per token
    Qwen3Config c = test_model_preset("tiny");
    c.num_experts = 8;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 64;
    c.norm_topk_prob = true;
    return c;
  }
  Qwen3Config c;
  c.vocab_size = 151936;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 40960;
  c.tie_word_embeddings = true;
  c.eos_token_ids = {151645};
  if (name == "qwen3-0.6b") {
    c.hidden_size = 1024;
    c.intermediate_size = 3072;
    c.num_hidden_layers = 28;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
  } else if (name == "tiny") {
    c.hidden_size = 64;
    c.intermediate_size = 192;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 32;
  } else if (name == "qwen3-30b-a3b") {
    c.hidden_size = 2048;
    c.intermediate_size = 6144;
    c.num_hidden_layers = 48;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 4;
    c.head_dim = 128;
    c.tie_word_embeddings = false;
    c.num_experts = 128;
    c.num_experts_per_tok = 8;
    c.moe_intermediate_size = 768;
    c.norm_topk_prob = true;
  } else {
    fail("unknown preset '", name, "' (known: qwen3-0.6b, qwen3-30b-a3b, tiny, tiny-moe)");
  }
  return c;
}

namespace {

// xoshiro-style generator; a sum of four uniforms is close enough to a normal for random weights.
struct FastNormal {
  uint64_t s;
  uint64_t next() {
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float operator()() {
    const uint64_t r = next();
    const float sum = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
    return (sum / 65535.0f - 2.0f) * 1.7320508f;  // mean 0, variance 1
  }
};

// A tensor of zeros; n is set to its element count.
TensorData zero_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype, int64_t& n) {
  n = 1;
  for (int64_t d : shape) n *= d;
  return {name, dtype, std::move(shape), std::vector<uint8_t>(static_cast<size_t>(n) * dtype_size(dtype))};
}

TensorData random_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype, float mean, float std,
                         FastNormal& rng) {
  int64_t n;
  TensorData t = zero_tensor(name, std::move(shape), dtype, n);
  for (int64_t i = 0; i < n; ++i) set_element(t, i, mean + std * rng());
  return t;
}

// Every tensor of a Qwen3 checkpoint in file order; make(name, shape, is_norm) makes each.
template <typename Make>
std::vector<TensorData> checkpoint_tensors(const Qwen3Config& c, const Qwen3Layout& layout, Make make) {
  const int64_t H = c.hidden_size, hd = c.head_dim, q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd,
                I = c.intermediate_size;
  std::vector<TensorData> ts;
  auto mat = [&](const std::string& name, int64_t rows, int64_t cols) {
    ts.push_back(make(name, {rows, cols}, false));
  };
  auto norm = [&](const std::string& name, int64_t n) { ts.push_back(make(name, {n}, true)); };
  mat(layout.prefix + "embed_tokens.weight", c.vocab_size, H);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = layout.prefix + "layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight", H);
    mat(p + "self_attn.q_proj.weight", q, H);
    mat(p + "self_attn.k_proj.weight", kv, H);
    mat(p + "self_attn.v_proj.weight", kv, H);
    mat(p + "self_attn.o_proj.weight", H, q);
    norm(p + "self_attn.q_norm.weight", hd);
    norm(p + "self_attn.k_norm.weight", hd);
    norm(p + "post_attention_layernorm.weight", H);
    if (c.is_sparse_layer(l)) {
      mat(p + "mlp.gate.weight", c.num_experts, H);
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        mat(x + "gate_proj.weight", c.moe_intermediate_size, H);
        mat(x + "up_proj.weight", c.moe_intermediate_size, H);
        mat(x + "down_proj.weight", H, c.moe_intermediate_size);
      }
    } else {
      mat(p + "mlp.gate_proj.weight", I, H);
      mat(p + "mlp.up_proj.weight", I, H);
      mat(p + "mlp.down_proj.weight", H, I);
    }
  }
  norm(layout.prefix + "norm.weight", H);
  if (!c.tie_word_embeddings && layout.lm_head) mat("lm_head.weight", c.vocab_size, H);
  return ts;
}

TensorData& tensor_named(std::vector<TensorData>& ts, const std::string& name) {
  for (TensorData& t : ts)
    if (t.name == name) return t;
  fail("internal: no tensor ", name);
}

void write_config_files(const std::string& dir, const Qwen3Config& c, DType dtype) {
  const char* torch_dtype = dtype == DType::BF16 || dtype == DType::F8_E4M3 ? "bfloat16"
                            : dtype == DType::F16                           ? "float16"
                                                                            : "float32";
  const bool moe = c.num_experts > 0;
  nlohmann::ordered_json config = {{"architectures", {moe ? "Qwen3MoeForCausalLM" : "Qwen3ForCausalLM"}},
                                   {"attention_bias", false},
                                   {"bos_token_id", 151643},
                                   {"eos_token_id", c.eos_token_ids.empty() ? 151645 : c.eos_token_ids[0]},
                                   {"head_dim", c.head_dim},
                                   {"hidden_act", "silu"},
                                   {"hidden_size", c.hidden_size},
                                   {"intermediate_size", c.intermediate_size},
                                   {"max_position_embeddings", c.max_position_embeddings},
                                   {"model_type", moe ? "qwen3_moe" : "qwen3"},
                                   {"num_attention_heads", c.num_attention_heads},
                                   {"num_hidden_layers", c.num_hidden_layers},
                                   {"num_key_value_heads", c.num_key_value_heads},
                                   {"rms_norm_eps", c.rms_norm_eps},
                                   {"rope_scaling", nullptr},
                                   {"rope_theta", c.rope_theta},
                                   {"tie_word_embeddings", c.tie_word_embeddings},
                                   {"torch_dtype", torch_dtype},
                                   {"use_sliding_window", false},
                                   {"vocab_size", c.vocab_size}};
  if (moe) {
    config["decoder_sparse_step"] = c.decoder_sparse_step;
    config["mlp_only_layers"] = c.mlp_only_layers;
    config["moe_intermediate_size"] = c.moe_intermediate_size;
    config["norm_topk_prob"] = c.norm_topk_prob;
    config["num_experts"] = c.num_experts;
    config["num_experts_per_tok"] = c.num_experts_per_tok;
  }
  write_file(replaced_file(dir, "config.json"), config.dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", 151643}, {"do_sample", true},  {"eos_token_id", {151645, 151643}},
                                {"pad_token_id", 151643}, {"temperature", 0.6}, {"top_k", 20},
                                {"top_p", 0.95}};
  write_file(replaced_file(dir, "generation_config.json"), gen.dump(2) + "\n");
}

}  // namespace

void write_test_model(const std::string& dir, const Qwen3Config& c, DType dtype, uint64_t seed,
                      const Qwen3Layout& layout) {
  std::filesystem::create_directories(dir);
  FastNormal rng{seed * 0x2545f4914f6cdd1dull + 1};
  write_safetensors(
      replaced_file(dir, "model.safetensors"),
      checkpoint_tensors(c, layout, [&](const std::string& name, std::vector<int64_t> shape, bool is_norm) {
        return random_tensor(name, std::move(shape), dtype, is_norm ? 1.0f : 0.0f, is_norm ? 0.1f : 0.02f, rng);
      }));
  write_config_files(dir, c, dtype);
}

void write_test_lora_adapter(const std::string& dir, const Qwen3Config& c, const TestLoraAdapter& adapter,
                             uint64_t seed, const std::string& prefix) {
  std::filesystem::create_directories(dir);
  FastNormal rng{seed * 0x2545f4914f6cdd1dull + 7};
  std::vector<TensorData> ts;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (const LoraProjection& p : lora_projections(c)) {
      const std::string name = std::strchr(p.module, '.') + 1;  // "q_proj": PEFT's target_modules
      if (std::find(adapter.targets.begin(), adapter.targets.end(), name) == adapter.targets.end()) continue;
      if (p.mlp && c.is_sparse_layer(l)) continue;
      const std::string module = prefix + "layers." + std::to_string(l) + "." + p.module;
      const int64_t r = adapter.lora.rank_of(module);
      const std::string key = "base_model.model." + module;
      ts.push_back(random_tensor(key + ".lora_A.weight", {r, p.in}, adapter.dtype, 0.0f,
                                 1.0f / std::sqrt(static_cast<float>(p.in)), rng));
      ts.push_back(random_tensor(key + ".lora_B.weight", {p.out, r}, adapter.dtype, 0.0f, 0.05f, rng));
    }
  write_safetensors(replaced_file(dir, "adapter_model.safetensors"), ts);
  const LoraConfig& lora = adapter.lora;
  nlohmann::ordered_json rank_pattern = nlohmann::ordered_json::object(),
                         alpha_pattern = nlohmann::ordered_json::object();
  for (const auto& [k, v] : lora.rank_pattern) rank_pattern[k] = v;
  for (const auto& [k, v] : lora.alpha_pattern) alpha_pattern[k] = v;
  const nlohmann::ordered_json config = {{"base_model_name_or_path", "qinfer make-test-model"},
                                         {"bias", "none"},
                                         {"fan_in_fan_out", false},
                                         {"lora_alpha", lora.lora_alpha},
                                         {"lora_dropout", 0.0},
                                         {"modules_to_save", nullptr},
                                         {"peft_type", "LORA"},
                                         {"r", lora.r},
                                         {"rank_pattern", rank_pattern},
                                         {"alpha_pattern", alpha_pattern},
                                         {"target_modules", adapter.targets},
                                         {"task_type", "CAUSAL_LM"},
                                         {"use_dora", false},
                                         {"use_rslora", lora.use_rslora}};
  write_file(replaced_file(dir, "adapter_config.json"), config.dump(2) + "\n");
}

void write_scripted_test_model(const std::string& dir, Qwen3Config c, DType dtype, std::span<const int32_t> chain) {
  if (chain.size() < 2) fail("a scripted model needs a chain of at least two tokens (a start and what follows it)");
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain[i] < 0 || chain[i] >= c.vocab_size)
      fail("scripted chain: token ", i, " is id ", chain[i], ", outside the vocabulary [0, ", c.vocab_size, ")");
  // The one-hot slot of each token that has a successor, and that successor.
  std::unordered_map<int32_t, std::pair<int64_t, int32_t>> slot_of;
  std::vector<int32_t> sources;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const auto [it, added] = slot_of.try_emplace(chain[i], static_cast<int64_t>(sources.size()), chain[i + 1]);
    if (added) {
      sources.push_back(chain[i]);
    } else if (it->second.second != chain[i + 1]) {
      const size_t first = static_cast<size_t>(
          std::find(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(i), chain[i]) - chain.begin());
      fail("scripted chain: token id ", chain[i], " is followed by ", it->second.second, " at position ", first + 1,
           " and by ", chain[i + 1], " at position ", i + 1,
           "; the next token depends only on the current one, so a token may recur only with "
           "the same successor");
    }
  }
  if (static_cast<int64_t>(sources.size()) > c.hidden_size)
    fail("scripted chain: ", sources.size(), " distinct tokens have a successor, but hidden size ", c.hidden_size,
         " holds at most ", c.hidden_size, " (use a larger preset or a shorter script)");

  c.tie_word_embeddings = false;  // the lm_head rows are not the embeddings
  std::filesystem::create_directories(dir);
  auto ts =
      checkpoint_tensors(c, Qwen3Layout{}, [&](const std::string& name, std::vector<int64_t> shape, bool is_norm) {
        int64_t n;
        TensorData t = zero_tensor(name, std::move(shape), dtype, n);
        if (is_norm)
          for (int64_t i = 0; i < n; ++i) set_element(t, i, 1.0f);
        return t;
      });
  TensorData& embed = tensor_named(ts, "model.embed_tokens.weight");
  TensorData& lm_head = tensor_named(ts, "lm_head.weight");
  for (const int32_t token : sources) {
    const auto [slot, next] = slot_of.at(token);
    set_element(embed, token * c.hidden_size + slot, 1.0f);
    set_element(lm_head, next * c.hidden_size + slot, 16.0f);
  }
  write_safetensors(replaced_file(dir, "model.safetensors"), ts);
  write_config_files(dir, c, dtype);
}

}  // namespace qinfer
