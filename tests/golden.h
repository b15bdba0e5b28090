// transformers' golden outputs of a fixture model (tests/data/golden/NAME.*):
// the prompts with their greedy paths, and each prompt's last-position logits.
#pragma once
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

namespace qinfer::test {

struct Golden {
  nlohmann::json meta;        // "prompts" (ids, greedy, ...), "vocab_size"
  std::vector<float> logits;  // [prompts, vocab]

  size_t vocab() const { return meta["vocab_size"].get<size_t>(); }
  size_t prompts() const { return meta["prompts"].size(); }
  std::vector<int32_t> ids(size_t prompt) const { return meta["prompts"][prompt]["ids"].get<std::vector<int32_t>>(); }
  std::span<const float> logits_of(size_t prompt) const { return std::span(logits).subspan(prompt * vocab(), vocab()); }
};

inline Golden load_golden(const std::string& name) {
  Golden g;
  std::ifstream in(data_path("golden/" + name + ".json"));
  g.meta = nlohmann::json::parse(in);
  g.logits.resize(g.prompts() * g.vocab());
  std::ifstream lf(data_path("golden/" + name + ".logits.f32"), std::ios::binary);
  lf.read(reinterpret_cast<char*>(g.logits.data()), static_cast<std::streamsize>(g.logits.size() * sizeof(float)));
  if (!lf) throw std::runtime_error("golden/" + name + ".logits.f32 holds fewer logits than its prompts need");
  return g;
}

// NaN where any difference is NaN, so that a NaN logit fails a tolerance.
inline float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) throw std::runtime_error("max_abs_diff: sizes differ");
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace qinfer::test
