// Qwen3MoeForCausalLM checkpoints made from the tiny dense one, for the tests
// of the sparse MLP.
#pragma once
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "test_util.h"
#include "util/error.h"

namespace qinfer::test {

// The tiny checkpoint as a mixture of `experts` (a power of two dividing its
// 192-wide MLP) that computes the same function: each layer not in
// `dense_layers` gets a zero router and every expert per token
// (num_experts_per_tok = experts, normalized), so each expert's weight is
// exactly 1 / experts; expert e holds the MLP's intermediate rows
// [e w, (e + 1) w) and its down_proj columns times `experts` (exact in bf16).
// The sum over experts is then the dense MLP's sum cut in pieces: the golden
// logits of transformers' dense model hold for it to rounding.
inline void write_dense_equivalent_moe(const std::string& dir, int64_t experts,
                                       const std::vector<int64_t>& dense_layers = {}) {
  namespace fs = std::filesystem;
  const std::string tiny = data_path("models/tiny");
  fs::create_directories(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(tiny + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(tiny + "/config.json"));
  const int64_t I = config["intermediate_size"].get<int64_t>(), H = config["hidden_size"].get<int64_t>(),
                w = I / experts;
  if (I % experts != 0 || (experts & (experts - 1)) != 0) fail("experts must be a power of two dividing ", I);
  config["architectures"] = {"Qwen3MoeForCausalLM"};
  config["model_type"] = "qwen3_moe";
  config["num_experts"] = experts;
  config["num_experts_per_tok"] = experts;
  config["norm_topk_prob"] = true;
  config["moe_intermediate_size"] = w;
  config["decoder_sparse_step"] = 1;
  config["mlp_only_layers"] = dense_layers;
  std::ofstream(dir + "/config.json") << config.dump(2);

  const SafetensorsFile source(tiny + "/model.safetensors");
  std::vector<TensorData> tensors;
  auto bf16_rows = [](const TensorView& t, int64_t r0, int64_t rows) {
    const int64_t row_bytes = t.shape[1] * 2;
    return std::vector<uint8_t>(t.data + r0 * row_bytes, t.data + (r0 + rows) * row_bytes);
  };
  for (const auto& [name, t] : source.tensors()) {
    const size_t mlp = name.find(".mlp.");
    const int64_t layer = mlp == std::string::npos ? -1 : std::stoll(name.substr(name.find("layers.") + 7));
    const bool dense = std::find(dense_layers.begin(), dense_layers.end(), layer) != dense_layers.end();
    if (mlp == std::string::npos || dense) {
      tensors.push_back({name, t.dtype, t.shape, {t.data, t.data + t.nbytes}});
      continue;
    }
    if (t.dtype != DType::BF16) fail("the tiny checkpoint is not bf16");
    const std::string prefix = name.substr(0, mlp + 5), proj = name.substr(mlp + 5);
    if (proj == "gate_proj.weight")  // once per layer
      tensors.push_back({prefix + "gate.weight",
                         DType::BF16,
                         {experts, H},
                         std::vector<uint8_t>(static_cast<size_t>(experts * H * 2), 0)});
    for (int64_t e = 0; e < experts; ++e) {
      const std::string out = prefix + "experts." + std::to_string(e) + "." + proj;
      if (proj != "down_proj.weight") {
        tensors.push_back({out, DType::BF16, {w, H}, bf16_rows(t, e * w, w)});
        continue;
      }
      std::vector<uint8_t> down(static_cast<size_t>(H * w * 2));
      for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < w; ++c) {
          uint16_t bits;
          std::memcpy(&bits, t.data + 2 * (r * I + e * w + c), 2);
          const uint32_t f32 = static_cast<uint32_t>(bits) << 16;
          float v;
          std::memcpy(&v, &f32, 4);
          v *= static_cast<float>(experts);
          uint32_t scaled;
          std::memcpy(&scaled, &v, 4);
          const uint16_t out_bits = static_cast<uint16_t>(scaled >> 16);  // exact: a power of two
          std::memcpy(&down[2 * (r * w + c)], &out_bits, 2);
        }
      tensors.push_back({out, DType::BF16, {H, w}, std::move(down)});
    }
  }
  write_safetensors(dir + "/model.safetensors", tensors);
}

}  // namespace qinfer::test
