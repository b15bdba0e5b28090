// Micro-benchmarks of the matmul kernels on Qwen3-0.6B shapes.
//   BM_Decode/<format>/<threads>: one activation row against a 100M-weight
//     matrix (far larger than the caches): bytes/s is the weight stream rate,
//     to compare with the machine's read bandwidth.
//   BM_DecodeInCache/<format>/1: the same kernel on 256 rows that stay in
//     L2: the compute speed of the decode kernel alone.
//   BM_Prefill/<format>/<threads>: 512 activation rows against the
//     [3072, 1024] gate_proj shape: GFLOP/s (counter "flops").
//   BM_BatchedDecode/<format>/<rows>: a few activation rows (the sequences of
//     a batched decode step) against the 100M-weight matrix, 2 threads:
//     GFLOP/s, the weights streamed once for all rows.
//   BM_Attention/<threads>: causal prefill attention of 512 positions,
//     16 query heads over 8 kv heads of 128.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "ops/quant.h"

using namespace qinfer;

namespace {

// Random weights of one format, with the storage they point into.
struct Weights {
  std::vector<uint8_t> data;
  WeightMatrix w;

  Weights(WeightFormat f, int64_t rows, int64_t cols) {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    w.format = f;
    w.rows = rows;
    w.cols = cols;
    data.resize(w.bytes());
    std::vector<float> row(static_cast<size_t>(kQuantGroupRows * cols));
    if (w.quantized()) {  // by groups of 8 rows (a Q4 group)
      for (int64_t r = 0; r < rows; r += kQuantGroupRows) {
        for (float& v : row) v = normal(rng);
        quantize_matrix(w.quant_format(), row.data(), std::min(kQuantGroupRows, rows - r), cols,
                        data.data() + quant_matrix_bytes(w.quant_format(), r, cols));
      }
      w.data = data.data();
      return;
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) row[c] = normal(rng);
      uint8_t* dst = data.data() + r * w.row_bytes();
      for (int64_t c = 0; c < cols; ++c) {
        if (f == WeightFormat::F32)
          reinterpret_cast<float*>(dst)[c] = row[c];
        else if (f == WeightFormat::BF16)
          reinterpret_cast<uint16_t*>(dst)[c] = f32_to_bf16(row[c]);
        else
          reinterpret_cast<uint16_t*>(dst)[c] = f32_to_f16(row[c]);
      }
    }
    w.data = data.data();
    std::vector<uint8_t> rows_layout = std::move(data);  // matmul takes float weights as panels
    data.resize(float_panel_bytes(f, rows, cols));
    ThreadPool pool(1);
    w = pack_float_panels(w, data.data(), pool);
  }
};

std::vector<float> activations(int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  return x;
}

void BM_Decode(benchmark::State& state, WeightFormat f) {
  const int64_t rows = 98304, cols = 1024;
  static std::unique_ptr<Weights> weights;
  if (!weights || weights->w.format != f) weights = std::make_unique<Weights>(f, rows, cols);
  ThreadPool pool(static_cast<int>(state.range(0)));
  const auto x = activations(cols);
  std::vector<float> y(rows);
  for (auto _ : state) {
    matmul(x.data(), 1, weights->w, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * weights->w.bytes()));
}

void BM_DecodeInCache(benchmark::State& state, WeightFormat f) {
  const int64_t rows = 256, cols = 1024;
  const Weights weights(f, rows, cols);
  ThreadPool pool(static_cast<int>(state.range(0)));
  const auto x = activations(cols);
  std::vector<float> y(rows);
  for (auto _ : state) {
    matmul(x.data(), 1, weights.w, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * weights.w.bytes()));
}

void BM_Prefill(benchmark::State& state, WeightFormat f) {
  const int64_t n = 512, rows = 3072, cols = 1024;
  const Weights weights(f, rows, cols);
  ThreadPool pool(static_cast<int>(state.range(0)));
  const auto x = activations(n * cols);
  std::vector<float> y(n * rows);
  for (auto _ : state) {
    matmul(x.data(), n, weights.w, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * n * rows * cols * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_BatchedDecode(benchmark::State& state, WeightFormat f) {
  const int64_t n = state.range(0), rows = 98304, cols = 1024;
  static std::unique_ptr<Weights> weights;
  if (!weights || weights->w.format != f) weights = std::make_unique<Weights>(f, rows, cols);
  ThreadPool pool(2);
  const auto x = activations(n * cols);
  std::vector<float> y(n * rows);
  for (auto _ : state) {
    matmul(x.data(), n, weights->w, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * n * rows * cols * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_Attention(benchmark::State& state) {
  const int64_t n = 512, nh = 16, nkv = 8, hd = 128;
  ThreadPool pool(static_cast<int>(state.range(0)));
  const auto q = activations(n * nh * hd), k = activations(n * nkv * hd), v = activations(n * nkv * hd);
  std::vector<float> out(n * nh * hd);
  for (auto _ : state) {
    attention(q.data(), n, 0, k.data(), v.data(), {nh, nkv, hd}, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  // QK^T and PV over the causal half: 2 * 2 * n^2/2 * hd per head.
  state.counters["flops"] = benchmark::Counter(2.0 * n * n * hd * nh * state.iterations(), benchmark::Counter::kIsRate);
}

#define QINFER_FORMATS(BM)                                                        \
  BENCHMARK_CAPTURE(BM, f32, WeightFormat::F32)->Arg(1)->Arg(2)->UseRealTime();   \
  BENCHMARK_CAPTURE(BM, bf16, WeightFormat::BF16)->Arg(1)->Arg(2)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM, f16, WeightFormat::F16)->Arg(1)->Arg(2)->UseRealTime();   \
  BENCHMARK_CAPTURE(BM, q8, WeightFormat::Q8)->Arg(1)->Arg(2)->UseRealTime();     \
  BENCHMARK_CAPTURE(BM, q4, WeightFormat::Q4)->Arg(1)->Arg(2)->UseRealTime()

QINFER_FORMATS(BM_Decode);
BENCHMARK_CAPTURE(BM_DecodeInCache, bf16, WeightFormat::BF16)->Arg(1);
BENCHMARK_CAPTURE(BM_DecodeInCache, q8, WeightFormat::Q8)->Arg(1);
BENCHMARK_CAPTURE(BM_DecodeInCache, q4, WeightFormat::Q4)->Arg(1);
QINFER_FORMATS(BM_Prefill);
BENCHMARK_CAPTURE(BM_BatchedDecode, q8, WeightFormat::Q8)->Arg(4)->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK_CAPTURE(BM_BatchedDecode, q4, WeightFormat::Q4)->Arg(4)->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_Attention)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
