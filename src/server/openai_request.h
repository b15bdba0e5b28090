// OpenAI request bodies (/v1/chat/completions, /v1/completions) mapped onto
// what the engine runs: token ids per prompt and the generation options, on
// top of the model's generation_config defaults. Every field is checked for
// type and range; a bad one is an ApiError (400) naming it. As OpenAI's API,
// an unknown field is refused (a misspelt one would be a silent default);
// fields that only label a request (user, metadata, ...) are ignored, and
// ones this server does not implement (suffix, ...) are refused by name
// unless their value asks for nothing.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/grammar_constraint.h"
#include "runtime/model_bundle.h"
#include "runtime/session.h"
#include "runtime/text_stream.h"
#include "server/api_error.h"
#include "server/chat_output.h"

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
  StopOptions text;  // how each choice's ids become its text (GenerationFields')
  int n = 1;         // choices per prompt
  // completions: each choice's text starts with its prompt (and its logprobs
  // with the prompt's tokens, the first of which has none); chat (vLLM's):
  // each choice's content starts with echo_text, the final message's text
  // when that message is the assistant's (continue_final_message's), else "".
  bool echo = false;
  std::string echo_text;
  // vLLM's prompt_logprobs: each prompt token's log-probability and rank
  // with the N most likely tokens there (-1: none asked for).
  int32_t prompt_logprobs = -1;
  bool stream = false, include_usage = false;
  bool continuous_usage = false;  // vLLM's stream_options.continuous_usage_stats: usage in every chunk
  bool include_reasoning = true;  // chat (vLLM's): false leaves reasoning_content out of the answer
  bool return_token_ids = false;  // vLLM's: each choice's token ids and its prompt's in the answer
  // vLLM's return_tokens_as_token_ids: the log-probabilities name each token
  // "token_id:<id>" (a token of partial UTF-8 has no text of its own).
  bool tokens_as_ids = false;
  std::string request_id;                  // vLLM's: the answer's id after its prefix ("": a random one)
  bool starts_in_reasoning = false;        // chat: the rendered prompt leaves a <think> block open
  ToolCalls tool_calls = ToolCalls::None;  // chat: which tool calls the reply may make
  std::shared_ptr<const nlohmann::ordered_json> xml_tools;  // chat: ChatPrompt's
  // Each tool call of the answer says where in the content it was made
  // ("content_before", ToolCall's): for the Responses API's item order,
  // which reads the chat answer; never sent to a client.
  bool tool_call_offsets = false;
  // Log-probabilities of the answer's text only, not of its reasoning or its
  // tool calls: the Responses API gives them with its output_text.
  bool answer_logprobs_only = false;
};

// The generation fields every request form reads (both endpoints, and the
// lines of qinfer batch): sampling on top of the model's generation_config
// (temperature, top_p, top_k, min_p, the penalties, logit_bias), seed (a fresh
// one when absent), stop, max_tokens / max_completion_tokens
// (default_max_tokens when absent; 0 only with echo: the prompt alone),
// ignore_eos, and vLLM's stop_token_ids, min_tokens, allowed_token_ids,
// include_stop_str_in_output, cache_salt and priority (the server takes a
// priority other than 0 only where its operator allows: ServerOptions).
struct GenerationFields {
  GenerationOptions options;
  std::vector<std::string> stop;
  // vLLM's include_stop_str_in_output and skip_special_tokens (with
  // spaces_between_special_tokens, which changes nothing for byte-level BPE);
  // min_tokens and the stop ids as options has them.
  StopOptions text;
};
GenerationFields parse_generation_fields(const nlohmann::ordered_json& body, const ModelBundle& bundle,
                                         int64_t default_max_tokens);
// Whether `id` is an integer in [0, vocab) as given, before any conversion
// (40.9, true or 2^32 + 40 would otherwise pass for another id); 40.0 is 40.
template <class Json>
bool is_token_id(const Json& id, uint64_t vocab) {
  if (id.is_number_unsigned()) return id.template get<uint64_t>() < vocab;
  if (integral_float(id))
    return id.template get<double>() >= 0 && id.template get<double>() < static_cast<double>(vocab);
  return id.is_number_integer() && id.template get<int64_t>() >= 0 &&
         static_cast<uint64_t>(id.template get<int64_t>()) < vocab;
}
// The fields of a /v1/chat/completions (chat) or /v1/completions body that
// this server does not know, in body order: the parsers refuse the first
// (serve --ignore-unknown-fields drops them instead). Fields it knows and
// does not implement are not among them: refused by name unless harmless.
std::vector<std::string> unknown_fields(const nlohmann::ordered_json& body, bool chat);
// vLLM's cache_salt of a request body: "" when absent; 400 naming it for
// another type or an empty string.
std::string requested_cache_salt(const nlohmann::ordered_json& body);
// Whether `id` may name an answer (vLLM's request_id, an X-Request-Id
// header): 1 to 256 printable ASCII characters, no spaces.
bool is_request_id(std::string_view id);
// Whether parse_generation_fields reads the field `key`.
bool is_generation_field(std::string_view key);
// body["messages"] checked and as the chat template reads them: "developer"
// is "system", content parts joined into a string (one per line, as vLLM and
// llama-server join them), tool call arguments parsed.
nlohmann::ordered_json chat_messages(const nlohmann::ordered_json& body);
// Whether `rendered` (the conversation `in` with its generation prompt) leaves
// a <think> block open: the reply starts in reasoning.
bool opens_reasoning(const ChatTemplate& chat_template, ChatTemplateInput in, const std::string& rendered);

// A chat request's prompt: its messages through the model's chat template,
// with the fields that shape it (tools and tool_choice, parallel_tool_calls,
// chat_template_kwargs, reasoning_effort, add_generation_prompt,
// continue_final_message); and the grammar its reply follows
// (response_format, a required tool_choice). ApiError 400 naming the field
// at fault.
struct ChatPrompt {
  std::vector<int32_t> ids;
  bool starts_in_reasoning = false;        // the prompt leaves a <think> block open
  ToolCalls tool_calls = ToolCalls::None;  // which tool calls the reply may make
  // The tools offered, when the model writes its calls as Qwen3-Coder's XML
  // (its template teaches that form); null otherwise.
  std::shared_ptr<const nlohmann::ordered_json> xml_tools;
  std::shared_ptr<const OutputGrammar> grammar;
  ThinkingBudget thinking;  // vLLM's thinking_token_budget
  bool over_limit = false;  // the prompt has more than max_tokens tokens (ids are left empty)
};
// chat_template_kwargs (vLLM's) into the template's input: enable_thinking
// (true or false), any other name a template variable; ApiError 400 for a
// name the request sets by a field of its own (messages, tools,
// add_generation_prompt).
void read_chat_template_kwargs(const nlohmann::ordered_json& kwargs, ChatTemplateInput& in);
ChatPrompt render_chat_prompt(const nlohmann::ordered_json& body, const ModelBundle& bundle,
                              size_t max_tokens = SIZE_MAX);
// Whether render_chat_prompt reads the field `key` (messages included).
bool is_chat_prompt_field(std::string_view key);

// vLLM's truncate_prompt_tokens: k >= 1 keeps each prompt's last k tokens,
// -1 its last `room` (what the context leaves the prompt); absent or null
// keeps all. 400 naming the field for another value or a k over `context`.
void truncate_prompts(const nlohmann::ordered_json& body, std::vector<std::vector<int32_t>>& prompts, int64_t context,
                      int64_t room);

// The named LoRA adapter the body's "model" asks for (vLLM's
// --lora-modules): its index, or -1 for the base model (also when none is
// named); 404 for a name the server does not serve.
int32_t requested_adapter(const nlohmann::ordered_json& body, const ServedModel& model);
// A pooling request's (embeddings, rerank, score, classify) adapter, as
// requested_adapter(), cache_salt, and vLLM's priority (an integer, 0 when
// absent); 400 naming the field for a bad one.
PromptOnlyOptions requested_prompt_only_options(const nlohmann::ordered_json& body, const ServedModel& model);
// What answers report as their "model": the adapter's name, or the base model's.
std::string served_name(const ServedModel& model, int32_t adapter);
CompletionRequest parse_chat_request(const nlohmann::ordered_json& body, const ServedModel& model);
// The 400 of a prompt that leaves the reply no room in the context.
class ContextLengthError : public ApiError {
 public:
  using ApiError::ApiError;
};
// parse_chat_request, but a conversation too long for the context loses its
// earliest messages after the leading system ones, the fewest that make it
// fit (the Responses API's truncation "auto": input items in the middle of
// the conversation go); the last message always stays.
CompletionRequest parse_chat_request_fitting(const nlohmann::ordered_json& body, const ServedModel& model);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, const ServedModel& model);

// The body as a JSON object, or ApiError 400 saying where it is malformed
// (`what` names it in the message), or that it nests deeper than 128 levels.
nlohmann::ordered_json parse_json_body(const std::string& body, const std::string& what = "the request body");

}  // namespace qinfer::server
