// The Prometheus text the server exposes: label values escaped as the
// exposition format requires.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace qinfer::server;

// A hunt finding: a served model name with a quote made the whole page
// unparseable for Prometheus.
TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m("my\"model\\x\ny");
  const std::string page = m.render({});
  EXPECT_NE(page.find("qinfer:num_requests_running{model_name=\"my\\\"model\\\\x\\ny\"} 0\n"), std::string::npos)
      << page;
}

// Hunt findings: bucket bounds were written as "%.17g" (le="0.10000000000000001", "1"), which selectors
// written as Prometheus' Python client writes them (le="0.1", "1.0") miss; the success counter had no
// series until a request ended so.
TEST(Metrics, BucketBoundsAndFinishReasonsAreWrittenAsVllmWritesThem) {
  const std::string page = Metrics("m").render({});
  for (const char* want : {"qinfer:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.1\"} 0\n",
                           "qinfer:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"1.0\"} 0\n",
                           "qinfer:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"240.0\"} 0\n",
                           "qinfer:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 0\n",
                           "qinfer:request_success_total{model_name=\"m\",finished_reason=\"length\"} 0\n",
                           "qinfer:request_success_total{model_name=\"m\",finished_reason=\"abort\"} 0\n"})
    EXPECT_NE(page.find(want), std::string::npos) << want << "\n" << page;
  EXPECT_EQ(page.find("0000000"), std::string::npos) << page;
}

// With named LoRA adapters, vLLM's lora_requests_info: the adapters of the
// running and of the waiting requests as labels, the reading's time (Unix
// seconds) as the value. Without adapters there is no such line. An unloaded
// adapter (no longer listed) still names the requests that run with it, and
// max_lora counts the listed ones.
TEST(Metrics, LoraRequestsInfoNamesTheAdaptersInUse) {
  EXPECT_EQ(Metrics("m").render({}).find("lora_requests_info"), std::string::npos);
  Metrics m("m");
  const std::vector<qinfer::Qwen3Model::AdapterName> adapters = {{"sql", true}, {"chat\"x", true}, {"law", false}};
  qinfer::engine::EngineLoop::Stats stats;
  stats.running_adapters = {1};
  stats.waiting_adapters = {0, 2};
  const std::string page = m.render(stats, adapters);
  const std::string want =
      "qinfer:lora_requests_info{model_name=\"m\",max_lora=\"2\",running_lora_adapters=\"chat\\\"x\","
      "waiting_lora_adapters=\"sql,law\"} ";
  const size_t at = page.find(want);
  ASSERT_NE(at, std::string::npos) << page;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(std::stod(page.substr(at + want.size())), now, 60.0);
  EXPECT_NE(m.render({}, adapters).find("running_lora_adapters=\"\",waiting_lora_adapters=\"\"} "), std::string::npos);
}
