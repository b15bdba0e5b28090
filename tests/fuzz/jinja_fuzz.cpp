// libFuzzer target: the input is a whole chat template, rendered against a
// conversation shaped like what chat and the server pass (system, user,
// assistant with a tool call, tool result; tools; generation prompt). A
// template error is the expected outcome of most inputs; anything else (a
// crash, a sanitizer report, an exception that is not a qinfer::Error, a
// time-out or a memory blow-up) is a finding. Seeded with the real Qwen3
// template (tests/fuzz/corpus/jinja); run by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "text/jinja/template.h"
#include "util/error.h"

namespace {

const std::vector<std::pair<std::string, qinfer::jinja::Value>>& variables() {
  static const auto vars = [] {
    const auto messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": "<think>\nlook it up\n</think>\n\n",
       "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "{\"temperature\": 21}"},
      {"role": "assistant", "content": "It is 21 degrees."},
      {"role": "user", "content": "Thanks /no_think"}])");
    const auto tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
    return std::vector<std::pair<std::string, qinfer::jinja::Value>>{
        {"messages", qinfer::jinja::from_json(messages)},
        {"tools", qinfer::jinja::from_json(tools)},
        {"add_generation_prompt", qinfer::jinja::Value(true)},
        {"enable_thinking", qinfer::jinja::Value(false)},
        {"bos_token", qinfer::jinja::Value("")},
        {"eos_token", qinfer::jinja::Value("<|im_end|>")}};
  }();
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  // Small enough limits that each run stays fast; the same code paths as the defaults.
  qinfer::jinja::RenderLimits limits;
  limits.max_output_bytes = size_t{1} << 20;
  limits.max_string_bytes = size_t{1} << 20;
  limits.max_list_items = size_t{1} << 16;
  limits.max_steps = 200000;
  try {
    const qinfer::jinja::Template t(source, "fuzz");
    (void)t.render(variables(), limits);
  } catch (const qinfer::Error&) {
    // a clear template error: the expected outcome
  }
  return 0;
}
