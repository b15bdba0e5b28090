// Tokenizer speed: loading tokenizer.json, encoding the long documents of the
// corpus (single thread), decoding. After the Google Benchmark runs, the same
// encode is measured side by side with Hugging Face tokenizers (its official
// Node binding, hf_tokenizers/hf_tokenize.js, also single-threaded), or the
// HF side is reported as SKIPPED with the reason (no node, no npm package).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf_tokenizers/hf_reference.h"
#include "text/tokenizer.h"

using namespace qinfer;

namespace {

const std::string kData = QINFER_TEST_DATA;
const std::string kTokenizerJson = kData + "/tokenizer.json";
const std::string kCorpus = kData + "/tokenizer/corpus.jsonl";

const Tokenizer& tokenizer() {
  static const Tokenizer tok = Tokenizer::from_file(kTokenizerJson);
  return tok;
}

// The corpus records whose category starts with "long-" (10-38 KB each), as hf_tokenize.js picks them.
const std::vector<std::string>& long_documents() {
  static const std::vector<std::string> docs = [] {
    std::vector<std::string> out;
    std::ifstream in(kCorpus);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto r = nlohmann::json::parse(line);
      if (r["cat"].get<std::string>().rfind("long-", 0) == 0) out.push_back(r["text"]);
    }
    return out;
  }();
  return docs;
}

size_t total_bytes(const std::vector<std::string>& docs) {
  size_t n = 0;
  for (const auto& d : docs) n += d.size();
  return n;
}

void BM_LoadTokenizerJson(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::from_file(kTokenizerJson));
}
BENCHMARK(BM_LoadTokenizerJson)->Unit(benchmark::kMillisecond);

void BM_EncodeLongDocuments(benchmark::State& state) {
  const auto& docs = long_documents();
  for (auto _ : state)
    for (const auto& d : docs) benchmark::DoNotOptimize(tokenizer().encode(d));
  state.SetBytesProcessed(int64_t(state.iterations() * total_bytes(docs)));
}
BENCHMARK(BM_EncodeLongDocuments)->Unit(benchmark::kMillisecond);

// The first pass of a freshly loaded tokenizer: its word cache starts empty.
void BM_EncodeLongDocumentsColdCache(benchmark::State& state) {
  const auto& docs = long_documents();
  for (auto _ : state) {
    state.PauseTiming();
    Tokenizer fresh = Tokenizer::from_file(kTokenizerJson);
    state.ResumeTiming();
    for (const auto& d : docs) benchmark::DoNotOptimize(fresh.encode(d));
  }
  state.SetBytesProcessed(int64_t(state.iterations() * total_bytes(docs)));
}
BENCHMARK(BM_EncodeLongDocumentsColdCache)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_DecodeLongDocuments(benchmark::State& state) {
  std::vector<std::vector<int32_t>> ids;
  for (const auto& d : long_documents()) ids.push_back(tokenizer().encode(d));
  for (auto _ : state)
    for (const auto& i : ids) benchmark::DoNotOptimize(tokenizer().decode(i));
  state.SetBytesProcessed(int64_t(state.iterations() * total_bytes(long_documents())));
}
BENCHMARK(BM_DecodeLongDocuments)->Unit(benchmark::kMillisecond);

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Our encode throughput over the long documents, warm cache, like the HF script measures.
double our_encode_mb_per_s(double min_seconds) {
  const auto& docs = long_documents();
  for (const auto& d : docs) tokenizer().encode(d);
  size_t bytes = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (seconds_since(t0) < min_seconds)
    for (const auto& d : docs) benchmark::DoNotOptimize(tokenizer().encode(d)), bytes += d.size();
  return bytes / 1e6 / seconds_since(t0);
}

void compare_with_hf() {
  std::printf("\n== encode, long documents of corpus.jsonl (%zu docs, %zu bytes), single thread ==\n",
              long_documents().size(), total_bytes(long_documents()));
  const auto t0 = std::chrono::steady_clock::now();
  Tokenizer::from_file(kTokenizerJson);
  std::printf("qinfer load tokenizer.json: %.1f ms\n", seconds_since(t0) * 1e3);
  const double ours = our_encode_mb_per_s(3.0);
  std::printf("qinfer encode:              %.2f MB/s\n", ours);

  const std::filesystem::path source_dir = std::filesystem::path(kData).parent_path().parent_path();
  auto found = hf::Reference::find(source_dir, source_dir / "bench" / "hf_tokenizers");
  if (auto* why = std::get_if<std::string>(&found)) {
    std::printf("HF tokenizers encode:       SKIPPED (%s): no comparison made\n", why->c_str());
    return;
  }
  const auto lines = std::get<hf::Reference>(found).run("bench", {kTokenizerJson, kCorpus, "3"});
  const auto result = nlohmann::json::parse(lines.at(0));
  const double theirs = result["mb_per_s"];
  std::printf("HF tokenizers encode:       %.2f MB/s (%s)\n", theirs, result["reference"].get<std::string>().c_str());
  std::printf("speed-up:                   %.1fx (goal: >= 2x)\n", ours / theirs);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  compare_with_hf();
  return 0;
}
