#include "server/metrics.h"

#include <charconv>
#include <chrono>
#include <cstdio>

namespace qinfer::server {

namespace {

std::string format_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// A bucket's bound as Prometheus' Python client writes it (Python's repr: the shortest text that reads back,
// "1.0" for a whole number): dashboards select buckets by that text (le="0.1"); "%.17g" wrote
// 0.10000000000000001.
std::string bucket_bound(double x) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void line(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name + "{" + labels + "} " + format_number(value) + "\n";
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// Latency buckets as vLLM's (seconds).
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                         0.75,  1.0,   2.5,  5.0,  7.5,  10,   20,   40,  80,   160};
const std::vector<double> kItlBounds = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0};
const std::vector<double> kE2eBounds = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60, 120, 240};

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::observe(double x) {
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (x <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += x;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    line(out, name + "_bucket", labels + ",le=\"" + bucket_bound(bounds_[i]) + "\"", static_cast<double>(cumulative));
  }
  line(out, name + "_bucket", labels + ",le=\"+Inf\"", static_cast<double>(count_));
  line(out, name + "_sum", labels, sum_);
  line(out, name + "_count", labels, static_cast<double>(count_));
}

namespace {

// A label value as the text exposition format writes it.
std::string escaped_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

}  // namespace

Metrics::Metrics(std::string model_name)
    : labels_("model_name=\"" + escaped_label(model_name) + "\""),
      // As vLLM, the reasons a request usually ends are there from the start: a rate over a series that
      // appears with its first 1 misses that one.
      finished_{{"stop", 0}, {"length", 0}, {"abort", 0}},
      ttft_(kTtftBounds),
      itl_(kItlBounds),
      e2e_(kE2eBounds) {}

void Metrics::record_request(int64_t prompt_tokens, int64_t generation_tokens, double ttft, double e2e,
                             const std::string& finish_reason) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += generation_tokens;
  if (ttft >= 0) ttft_.observe(ttft);
  e2e_.observe(e2e);
  for (auto& [reason, n] : finished_)
    if (reason == finish_reason) {
      ++n;
      return;
    }
  finished_.emplace_back(finish_reason, 1);
}

void Metrics::record_inter_token(double seconds) {
  std::lock_guard lock(mu_);
  itl_.observe(seconds);
}

std::string Metrics::render(const engine::EngineLoop::Stats& stats,
                            const std::vector<Qwen3Model::AdapterName>& adapters) const {
  std::string out;
  auto gauge = [&](const char* name, const char* help, double v) {
    header(out, name, "gauge", help);
    line(out, name, labels_, v);
  };
  auto counter = [&](const char* name, const char* help, double v) {
    header(out, name, "counter", help);
    line(out, name, labels_, v);
  };
  gauge("qinfer:num_requests_running", "Requests in the running batch.", static_cast<double>(stats.running));
  gauge("qinfer:num_requests_waiting", "Requests waiting to be scheduled.", static_cast<double>(stats.waiting));
  gauge("qinfer:kv_cache_usage_perc", "Fraction of KV blocks held by live requests (1 = all).",
        stats.kv_blocks > 0 ? static_cast<double>(stats.kv_blocks_used) / stats.kv_blocks : 0.0);
  counter("qinfer:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
          static_cast<double>(stats.prefix_queries));
  counter("qinfer:prefix_cache_hits_total", "Of them, tokens found cached.", static_cast<double>(stats.prefix_hits));
  counter("qinfer:num_preemptions_total", "Sequences sent back to wait because the KV pool was full.",
          static_cast<double>(stats.preemptions));
  counter("qinfer:spec_decode_num_draft_tokens_total",
          "Draft tokens run (speculative decoding: --draft, or a request's prediction).",
          static_cast<double>(stats.draft_tokens));
  counter("qinfer:spec_decode_num_accepted_tokens_total", "Of them, tokens the model confirmed.",
          static_cast<double>(stats.draft_accepted));
  if (!adapters.empty()) {  // vLLM's: the adapters in use as labels, the time of the reading as the value
    auto names = [&](const std::vector<int32_t>& indexes) {
      std::string out;
      for (int32_t a : indexes) {
        if (!out.empty()) out += ',';
        out += escaped_label(adapters.at(static_cast<size_t>(a)).name);
      }
      return out;
    };
    header(out, "qinfer:lora_requests_info", "gauge", "Named LoRA adapters of the running and the waiting requests.");
    line(out, "qinfer:lora_requests_info",
         labels_ + ",max_lora=\"" +
             std::to_string(std::count_if(adapters.begin(), adapters.end(), [](const auto& a) { return a.listed; })) +
             "\",running_lora_adapters=\"" + names(stats.running_adapters) + "\",waiting_lora_adapters=\"" +
             names(stats.waiting_adapters) + "\"",
         std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  std::lock_guard lock(mu_);
  counter("qinfer:prompt_tokens_total", "Prompt tokens of finished requests.", static_cast<double>(prompt_tokens_));
  counter("qinfer:generation_tokens_total", "Generated tokens of finished requests.",
          static_cast<double>(generation_tokens_));
  header(out, "qinfer:request_success_total", "counter", "Finished requests by finish reason.");
  for (const auto& [reason, n] : finished_)
    line(out, "qinfer:request_success_total", labels_ + ",finished_reason=\"" + reason + "\"", static_cast<double>(n));
  header(out, "qinfer:time_to_first_token_seconds", "histogram", "Time to first token.");
  ttft_.render(out, "qinfer:time_to_first_token_seconds", labels_);
  header(out, "qinfer:inter_token_latency_seconds", "histogram", "Time between successive tokens of a request.");
  itl_.render(out, "qinfer:inter_token_latency_seconds", labels_);
  header(out, "qinfer:e2e_request_latency_seconds", "histogram", "Time from arrival to the last token.");
  e2e_.render(out, "qinfer:e2e_request_latency_seconds", labels_);
  return out;
}

}  // namespace qinfer::server
