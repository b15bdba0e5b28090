// The server's Prometheus metrics, named after vLLM's with our prefix
// (qinfer:num_requests_running, qinfer:time_to_first_token_seconds, ...), in
// the text exposition format. Thread-safe: HTTP threads record, /metrics
// renders.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_loop.h"

namespace qinfer::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double x);
  // name_bucket{le=...} lines, name_sum, name_count; `labels` like model_name="x".
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);

  // One finished request: its token counts, and its latencies in seconds
  // (ttft < 0: it produced no token).
  void record_request(int64_t prompt_tokens, int64_t generation_tokens, double ttft, double e2e,
                      const std::string& finish_reason);
  void record_inter_token(double seconds);

  // The whole exposition; engine gauges from `stats`; `adapters` name Stats'
  // adapter indexes (Qwen3Model::adapter_names()).
  std::string render(const engine::EngineLoop::Stats& stats,
                     const std::vector<Qwen3Model::AdapterName>& adapters = {}) const;

 private:
  std::string labels_;
  mutable std::mutex mu_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  std::vector<std::pair<std::string, int64_t>> finished_;  // by finish reason
  Histogram ttft_, itl_, e2e_;
};

}  // namespace qinfer::server
