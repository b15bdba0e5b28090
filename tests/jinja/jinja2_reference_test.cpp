// Every case in jinja2_cases.json (written by scripts/make_jinja2_cases.py with
// Python jinja2 in transformers' chat-template environment): qinfer renders
// the same text, and fails wherever jinja2 failed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "render_helper.h"
#include "util/error.h"

namespace qinfer::jinja {
namespace {

nlohmann::ordered_json load_cases() {
  std::ifstream f(QINFER_TEST_DATA "/../jinja/jinja2_cases.json");
  EXPECT_TRUE(f.good()) << "tests/jinja/jinja2_cases.json is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

TEST(Jinja2Reference, EveryCaseRendersLikeJinja2) {
  nlohmann::ordered_json data = load_cases();
  const auto& cases = data["cases"];
  ASSERT_GT(cases.size(), 300u);
  int outputs = 0, errors = 0;
  for (const auto& c : cases) {
    std::string source = c["template"].get<std::string>();
    SCOPED_TRACE(c["group"].get<std::string>() + ": " + source.substr(0, 200));
    if (c.contains("output")) {
      ++outputs;
      try {
        EXPECT_EQ(testing::render(source, c["context"]), c["output"].get<std::string>());
      } catch (const Error& e) {
        ADD_FAILURE() << "jinja2 rendered this, qinfer failed: " << e.what();
      }
    } else {
      ++errors;
      EXPECT_THROW(testing::render(source, c["context"]), Error) << "jinja2 failed with " << c["error"];
    }
  }
  EXPECT_GT(outputs, 200);
  EXPECT_GT(errors, 50);
}

}  // namespace
}  // namespace qinfer::jinja
