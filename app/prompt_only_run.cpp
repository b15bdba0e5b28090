#include "prompt_only_run.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "standard_input.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

std::vector<std::string> texts_or_stdin_lines(const std::vector<std::string>& arguments) {
  if (!arguments.empty()) return arguments;
  std::vector<std::string> texts;
  require_readable_stdin();
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF lines (a Windows file) as chat reads them
    texts.push_back(std::move(line));
  }
  require_stdin_read_without_error();
  return texts;
}

void run_prompt_only(const ModelBundle& bundle, int threads, const EngineFlags& flags,
                     const std::vector<std::string>& texts, const PromptOnlyRun& run) {
  struct Job {
    std::vector<int32_t> ids;
    std::string error;  // set when the text was refused
    int64_t handle = -1;
  };
  std::vector<Job> jobs(texts.size());
  int64_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      jobs[i].ids = run.ids_of(texts[i]);
      longest = std::max(longest, static_cast<int64_t>(jobs[i].ids.size()));
    } catch (const Error& e) {
      jobs[i].error = "text " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  // A context of the longest text: the default pool is then a few of them,
  // whose blocks are recycled, not one of the model's full contexts per
  // running text, each new text writing pages never touched before (on
  // some hosts first touch costs more than the prefill: docs/performance.md).
  ThreadPool pool(threads);
  engine::Engine engine(*bundle.model, pool, flags.engine_options(*bundle.model, longest));
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].error.empty()) continue;
    try {
      jobs[i].handle = run.add(engine, jobs[i].ids);
    } catch (const Error& e) {
      jobs[i].error = "text " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  Timer timer;
  engine.run_until_idle();
  const double seconds = timer.seconds();

  int64_t tokens = 0, refused = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    nlohmann::ordered_json out = {{"index", i}};
    if (jobs[i].handle < 0) {
      out["error"] = jobs[i].error;
      ++refused;
    } else {
      const GenerationResult& r = engine.result(jobs[i].handle);
      if (r.reason == StopReason::Error) fail(r.error);  // corrupt weights: every text would be wrong
      out["prompt_tokens"] = r.prompt_tokens;
      run.describe(out, engine.output(jobs[i].handle));
      tokens += r.prompt_tokens;
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fprintf(stderr, "[%zu %s (%lld refused), %lld tokens in %.2f s: %.1f tok/s]\n", jobs.size(), run.noun,
               static_cast<long long>(refused), static_cast<long long>(tokens), seconds,
               seconds > 0 ? tokens / seconds : 0.0);
}

}  // namespace qinfer::cli
