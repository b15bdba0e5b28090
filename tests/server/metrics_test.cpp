// The Prometheus text the server exposes: label values escaped as the
// exposition format requires.
#include "server/metrics.h"

#include <gtest/gtest.h>

using namespace qinfer::server;

// A hunt finding: a served model name with a quote made the whole page
// unparseable for Prometheus.
TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m("my\"model\\x\ny");
  const std::string page = m.render({}, 16);
  EXPECT_NE(page.find("qinfer:num_requests_running{model_name=\"my\\\"model\\\\x\\ny\"} 0\n"), std::string::npos)
      << page;
}
