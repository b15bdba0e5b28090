// A Qwen3ForSequenceClassification checkpoint made from the tiny one, for
// the tests of reranking with a classifier head.
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

// The tiny checkpoint converted as vLLM and sentence-transformers convert
// Qwen3-Reranker to Qwen3ForSequenceClassification: score.weight [1, hidden]
// is the lm_head's "yes" row minus its "no" row (the tied embedding's here);
// untied, the checkpoint has no lm_head at all. With `labels`, a classifier
// of that many labels instead, named so in config.json's id2label: row k of
// score.weight the embedding of token 1000 + 77 k.
inline void write_sequence_classifier(const std::string& dir, bool tied, const std::vector<std::string>& labels = {}) {
  namespace fs = std::filesystem;
  const std::string tiny = data_path("models/tiny");
  fs::create_directories(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(tiny + "/" + f, dir + "/" + f);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(tiny + "/config.json"));
  config["architectures"] = {"Qwen3ForSequenceClassification"};
  config["tie_word_embeddings"] = tied;
  for (size_t k = 0; k < labels.size(); ++k) config["id2label"][std::to_string(k)] = labels[k];
  std::ofstream(dir + "/config.json") << config.dump(2);
  const SafetensorsFile source(tiny + "/model.safetensors");
  std::vector<TensorData> tensors;
  for (const auto& [name, t] : source.tensors())
    tensors.push_back({name, t.dtype, t.shape, {t.data, t.data + t.nbytes}});
  const TensorView& embed = source.tensors().at("model.embed_tokens.weight");
  if (embed.dtype != DType::BF16) fail("the tiny checkpoint is not bf16");
  const int64_t hidden = embed.shape[1];
  auto value = [&](int64_t row, int64_t col) {
    uint16_t bits;
    std::memcpy(&bits, embed.data + 2 * (row * hidden + col), 2);
    const uint32_t f32 = static_cast<uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &f32, 4);
    return v;
  };
  std::vector<float> score;
  for (int64_t c = 0; c < hidden; ++c) score.push_back(value(9693, c) - value(2152, c));
  if (!labels.empty()) score.clear();
  for (size_t k = 0; k < labels.size(); ++k)
    for (int64_t c = 0; c < hidden; ++c) score.push_back(value(1000 + 77 * static_cast<int64_t>(k), c));
  const auto* bytes = reinterpret_cast<const uint8_t*>(score.data());
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(labels.size()));
  tensors.push_back({"score.weight", DType::F32, {rows, hidden}, {bytes, bytes + score.size() * sizeof(float)}});
  write_safetensors(dir + "/model.safetensors", tensors);
}

}  // namespace qinfer::test
