// Cost of one Sampler::sample call at Qwen3's vocabulary size, on logits
// shaped like a real model's (normal, sigma 3). Each iteration copies the
// logits first (sample() uses them as scratch); BM_CopyLogits is that copy
// alone, to subtract.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/sampler.h"

namespace {

constexpr size_t kVocab = 151936;

const std::vector<float>& realistic_logits() {
  static const std::vector<float> logits = [] {
    std::mt19937_64 rng(2024);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> v(kVocab);
    for (float& l : v) l = normal(rng);
    return v;
  }();
  return logits;
}

// A 512-token prompt and 256 generated tokens, for the penalty passes.
const std::vector<int32_t>& history() {
  static const std::vector<int32_t> ids = [] {
    std::mt19937 rng(7);
    std::vector<int32_t> v(768);
    for (int32_t& id : v) id = int32_t(rng() % kVocab);
    return v;
  }();
  return ids;
}
constexpr size_t kPromptLen = 512;

void run(benchmark::State& state, const qinfer::SamplingParams& params, bool with_history) {
  qinfer::Sampler sampler(params, kVocab);
  const std::vector<float>& logits = realistic_logits();
  std::vector<float> scratch(kVocab);
  std::span<const int32_t> hist;
  if (with_history) hist = history();
  for (auto _ : state) {
    std::memcpy(scratch.data(), logits.data(), kVocab * sizeof(float));
    benchmark::DoNotOptimize(sampler.sample(scratch, hist, with_history ? kPromptLen : 0));
  }
}

qinfer::SamplingParams params(float temperature, int top_k, float top_p, float min_p) {
  qinfer::SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = 1;
  return p;
}

void BM_CopyLogits(benchmark::State& state) {
  const std::vector<float>& logits = realistic_logits();
  std::vector<float> scratch(kVocab);
  for (auto _ : state) {
    std::memcpy(scratch.data(), logits.data(), kVocab * sizeof(float));
    benchmark::DoNotOptimize(scratch.data());
    benchmark::ClobberMemory();
  }
}

void BM_Greedy(benchmark::State& state) { run(state, params(0.0f, 0, 1.0f, 0.0f), false); }
void BM_Qwen3Defaults(benchmark::State& state) {  // T 0.6, top-k 20, top-p 0.95
  run(state, params(0.6f, 20, 0.95f, 0.0f), false);
}
void BM_Qwen3DefaultsWithPenalties(benchmark::State& state) {
  qinfer::SamplingParams p = params(0.6f, 20, 0.95f, 0.0f);
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.1f;
  run(state, p, true);
}
void BM_TopPOnly(benchmark::State& state) { run(state, params(0.6f, 0, 0.95f, 0.0f), false); }
void BM_MinPOnly(benchmark::State& state) { run(state, params(1.0f, 0, 1.0f, 0.05f), false); }
void BM_TemperatureOnly(benchmark::State& state) { run(state, params(1.0f, 0, 1.0f, 0.0f), false); }

BENCHMARK(BM_CopyLogits)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Greedy)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3Defaults)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3DefaultsWithPenalties)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopPOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MinPOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TemperatureOnly)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
