// What `embed` and `rerank` share: texts from the arguments or stdin lines,
// each made into a prompt-only engine request (an embedding, a score), run
// together on an engine whose KV pool is sized by the longest, and one JSON
// line per text in input order: {"index", "prompt_tokens", ...} or
// {"index", "error"} for a text that cannot run (the others still do).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_flags.h"
#include "runtime/model_bundle.h"

namespace qinfer::cli {

// The arguments, or without any, each line of stdin.
std::vector<std::string> texts_or_stdin_lines(const std::vector<std::string>& arguments);

struct PromptOnlyRun {
  const char* noun = "texts";  // in the stderr summary
  // A text's ids (Error refuses that text alone).
  std::function<std::vector<int32_t>(const std::string& text)> ids_of;
  // Queues the ids: Engine::add_embedding or add_scoring.
  std::function<int64_t(engine::Engine& engine, const std::vector<int32_t>& ids)> add;
  // Adds the request's result (Engine::output()) to its line.
  std::function<void(nlohmann::ordered_json& line, std::span<const float> output)> describe;
};

void run_prompt_only(const ModelBundle& bundle, int threads, const EngineFlags& flags,
                     const std::vector<std::string>& texts, const PromptOnlyRun& run);

}  // namespace qinfer::cli
