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
//   BM_Attention/<kv type>/<threads>: causal prefill attention of 512
//     positions, 16 query heads over 8 kv heads of 128, keys and values in a
//     KV pool of 16-position blocks (the engine's).
//   BM_AttentionDeep/<kv type>/<depth>: the same 512 query positions after
//     `depth` cached ones (the last 512 of a depth + 512 prompt), 1 thread:
//     where long prompts spend their prefill.
//   BM_AttentionDecode/<kv type>/<depth>: one query position over `depth`
//     cached positions, 1 thread: a decode step's attention at that depth.
// --simd=TARGET (first argument) runs the kernels of a lesser target, as
// qinfer's --simd does.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/kv_pool.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "ops/quant.h"
#include "ops/simd.h"

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

// Queries and a KV pool holding `positions` random keys and values.
struct AttentionInputs {
  static constexpr int64_t kHeads = 16, kKvHeads = 8, kHeadDim = 128, kBlock = 16;
  std::vector<float> q, out;
  std::vector<int32_t> table;
  KvPool pool;

  AttentionInputs(int64_t queries, int64_t positions, DType kv)
      : q(activations(queries * kHeads * kHeadDim)),
        out(q.size()),
        pool(1, kKvHeads, kHeadDim, (positions + kBlock - 1) / kBlock, kBlock, kv) {
    for (int32_t b = 0; b < pool.n_blocks(); ++b) table.push_back(b);
    const auto k = activations(positions * kKvHeads * kHeadDim), v = activations(positions * kKvHeads * kHeadDim);
    pool.store(0, table.data(), 0, positions, k.data(), v.data());
  }
  void run(int64_t n, int64_t pos0, ThreadPool& threads) {
    const AttentionSeq seq{q.data(), out.data(), n, pos0, pool.blocks(0, table.data())};
    attention(std::span(&seq, 1), {kHeads, kKvHeads, kHeadDim}, threads);
  }
};

void BM_Attention(benchmark::State& state, DType kv) {
  const int64_t n = 512;
  ThreadPool pool(static_cast<int>(state.range(0)));
  AttentionInputs in(n, n, kv);
  for (auto _ : state) {
    in.run(n, 0, pool);
    benchmark::DoNotOptimize(in.out.data());
  }
  // QK^T and PV over the causal half: 2 * 2 * n^2/2 * hd per head.
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * AttentionInputs::kHeadDim * AttentionInputs::kHeads * state.iterations(),
                         benchmark::Counter::kIsRate);
}

void BM_AttentionDeep(benchmark::State& state, DType kv) {
  const int64_t n = 512, depth = state.range(0);
  ThreadPool pool(1);
  AttentionInputs in(n, depth + n, kv);
  for (auto _ : state) {
    in.run(n, depth, pool);
    benchmark::DoNotOptimize(in.out.data());
  }
  // Each query sees depth keys plus the causal half of its own 512.
  state.counters["flops"] = benchmark::Counter(
      4.0 * n * (depth + n / 2.0) * AttentionInputs::kHeadDim * AttentionInputs::kHeads * state.iterations(),
      benchmark::Counter::kIsRate);
}

void BM_AttentionDecode(benchmark::State& state, DType kv) {
  const int64_t depth = state.range(0);
  ThreadPool pool(1);
  AttentionInputs in(1, depth + 1, kv);
  for (auto _ : state) {
    in.run(1, depth, pool);
    benchmark::DoNotOptimize(in.out.data());
  }
  state.counters["flops"] =
      benchmark::Counter(4.0 * (depth + 1) * AttentionInputs::kHeadDim * AttentionInputs::kHeads * state.iterations(),
                         benchmark::Counter::kIsRate);
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
BENCHMARK_CAPTURE(BM_Attention, f16, DType::F16)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Attention, f32, DType::F32)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionDeep, f16, DType::F16)->Arg(3584)->UseRealTime();
BENCHMARK_CAPTURE(BM_AttentionDecode, f16, DType::F16)->Arg(512)->Arg(4096);

}  // namespace

int main(int argc, char** argv) {
  const std::string simd_flag = "--simd=";
  if (argc > 1 && std::string(argv[1]).starts_with(simd_flag)) {
    const std::string target = std::string(argv[1]).substr(simd_flag.size());
    if (!simd::limit_target(target)) {
      std::fprintf(stderr, "ops_bench: --simd: %s is not one of: %s\n", target.c_str(),
                   simd::runnable_targets().c_str());
      return 1;
    }
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  std::fprintf(stderr, "kernels: %s\n", simd::dispatched_target().c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
