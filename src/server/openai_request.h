// OpenAI request bodies (/v1/chat/completions, /v1/completions) mapped onto
// what the engine runs: token ids per prompt and the generation options, on
// top of the model's generation_config defaults. Every field is checked for
// type and range; a bad one is an ApiError (400) naming it. Fields we do not
// use (user, response_format, ...) are ignored, as vLLM and llama-server do.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model_bundle.h"
#include "runtime/session.h"

namespace qinfer::server {

struct ServedModel {
  const ModelBundle& bundle;
  std::string name;  // what /v1/models lists and requests must name
  int64_t context;   // positions per sequence (prompt + completion)
};

struct CompletionRequest {
  bool chat = false;
  std::vector<std::vector<int32_t>> prompts;  // chat: one; completions: one per prompt
  GenerationOptions options;                  // choice i of a prompt draws with seed + i
  std::vector<std::string> stop;
  int n = 1;  // choices per prompt
  bool stream = false, include_usage = false;
  bool starts_in_reasoning = false;  // chat: the rendered prompt leaves a <think> block open
};

CompletionRequest parse_chat_request(const nlohmann::ordered_json& body, const ServedModel& model);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, const ServedModel& model);

// The body as a JSON object, or ApiError 400 saying where it is malformed.
nlohmann::ordered_json parse_json_body(const std::string& body);

}  // namespace qinfer::server
