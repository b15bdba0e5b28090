#include "model/test_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors_writer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

Qwen3Config test_model_preset(const std::string& name) {
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
  } else {
    fail("unknown preset '", name, "' (known: qwen3-0.6b, tiny)");
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

TensorData random_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype, float mean, float std,
                         FastNormal& rng) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  TensorData t{name, dtype, std::move(shape), std::vector<uint8_t>(static_cast<size_t>(n) * dtype_size(dtype))};
  for (int64_t i = 0; i < n; ++i) {
    const float v = mean + std * rng();
    if (dtype == DType::F32) {
      std::memcpy(&t.bytes[4 * i], &v, 4);
    } else {
      const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(&t.bytes[2 * i], &h, 2);
    }
  }
  return t;
}

}  // namespace

void write_test_model(const std::string& dir, const Qwen3Config& c, DType dtype, uint64_t seed) {
  std::filesystem::create_directories(dir);
  FastNormal rng{seed * 0x2545f4914f6cdd1dull + 1};
  const int64_t H = c.hidden_size, hd = c.head_dim, q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd,
                I = c.intermediate_size;
  std::vector<TensorData> ts;
  auto mat = [&](const std::string& name, int64_t rows, int64_t cols) {
    ts.push_back(random_tensor(name, {rows, cols}, dtype, 0.0f, 0.02f, rng));
  };
  auto norm = [&](const std::string& name, int64_t n) {
    ts.push_back(random_tensor(name, {n}, dtype, 1.0f, 0.1f, rng));
  };
  mat("model.embed_tokens.weight", c.vocab_size, H);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight", H);
    mat(p + "self_attn.q_proj.weight", q, H);
    mat(p + "self_attn.k_proj.weight", kv, H);
    mat(p + "self_attn.v_proj.weight", kv, H);
    mat(p + "self_attn.o_proj.weight", H, q);
    norm(p + "self_attn.q_norm.weight", hd);
    norm(p + "self_attn.k_norm.weight", hd);
    norm(p + "post_attention_layernorm.weight", H);
    mat(p + "mlp.gate_proj.weight", I, H);
    mat(p + "mlp.up_proj.weight", I, H);
    mat(p + "mlp.down_proj.weight", H, I);
  }
  norm("model.norm.weight", H);
  if (!c.tie_word_embeddings) mat("lm_head.weight", c.vocab_size, H);
  write_safetensors(dir + "/model.safetensors", ts);

  const char* torch_dtype = dtype == DType::BF16 ? "bfloat16" : dtype == DType::F16 ? "float16" : "float32";
  nlohmann::ordered_json config = {{"architectures", {"Qwen3ForCausalLM"}},
                                   {"attention_bias", false},
                                   {"bos_token_id", 151643},
                                   {"eos_token_id", c.eos_token_ids.empty() ? 151645 : c.eos_token_ids[0]},
                                   {"head_dim", hd},
                                   {"hidden_act", "silu"},
                                   {"hidden_size", H},
                                   {"intermediate_size", I},
                                   {"max_position_embeddings", c.max_position_embeddings},
                                   {"model_type", "qwen3"},
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
  write_file(dir + "/config.json", config.dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", 151643}, {"do_sample", true},  {"eos_token_id", {151645, 151643}},
                                {"pad_token_id", 151643}, {"temperature", 0.6}, {"top_k", 20},
                                {"top_p", 0.95}};
  write_file(dir + "/generation_config.json", gen.dump(2) + "\n");
}

}  // namespace qinfer
