#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "server/api_error.h"
#include "server/json_shape.h"
#include "server/reply_grammar.h"
#include "server/xml_tool_call.h"
#include "text/grammar/code_points.h"

namespace qinfer::server {

namespace {

using nlohmann::ordered_json;

constexpr int kMaxChoices = 16;
constexpr size_t kMaxStops = 16;
constexpr int64_t kMaxTopLogprobs = 20;  // OpenAI's limit for top_logprobs
// OpenAI's legacy completions (and vLLM's) stop after 16 tokens unless told
// otherwise: a base model given no max_tokens would otherwise fill the context.
constexpr int64_t kCompletionsMaxTokens = 16;
// What parse_generation_fields reads.
constexpr const char* kGenerationFields[] = {
    "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "logit_bias", "seed", "stop", "max_tokens", "max_completion_tokens", "ignore_eos",
    // vLLM's
    "stop_token_ids", "min_tokens", "allowed_token_ids", "include_stop_str_in_output", "bad_words",
    "skip_special_tokens", "spaces_between_special_tokens", "cache_salt", "priority"};
// vLLM's bounds on bad_words (per request).
constexpr size_t kMaxBadWords = 128, kMaxBadWordTokens = 1024;

std::string format(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

double number(const ordered_json& body, const char* key, double fallback, double lo, double hi) {
  if (!given(body, key)) return fallback;
  const ordered_json& v = body[key];
  if (!v.is_number()) bad(key, std::string("'") + key + "' must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    bad(key, std::string("'") + key + "' must be between " + format(lo) + " and " + format(hi) + ", got " + v.dump());
  return x;
}

int64_t integer(const ordered_json& body, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!given(body, key)) return fallback;
  const ordered_json& v = body[key];
  if (!v.is_number_integer() && !integral_float(v)) bad(key, std::string("'") + key + "' must be an integer");
  bool in_range;
  if (v.is_number_unsigned())
    in_range = v.get<uint64_t>() <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v.get<uint64_t>()) >= lo;
  else if (v.is_number_integer())
    in_range = v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  else
    in_range = v.get<double>() >= static_cast<double>(lo) && v.get<double>() <= static_cast<double>(hi);
  if (!in_range)
    bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                 ", got " + v.dump());
  return v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
}

bool boolean(const ordered_json& body, const char* key, bool fallback) {
  if (!given(body, key)) return fallback;
  if (!body[key].is_boolean()) bad(key, std::string("'") + key + "' must be true or false");
  return body[key].get<bool>();
}

std::vector<std::string> stop_strings(const ordered_json& body) {
  std::vector<std::string> out;
  if (!given(body, "stop")) return out;
  const ordered_json& stop = body["stop"];
  if (stop.is_string()) {
    out.push_back(stop.get<std::string>());
  } else if (stop.is_array()) {
    if (stop.size() > kMaxStops) bad("stop", "'stop' may hold at most " + std::to_string(kMaxStops) + " strings");
    for (const auto& s : stop) {
      if (!s.is_string()) bad("stop", "'stop' must be a string or a list of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    bad("stop", "'stop' must be a string or a list of strings");
  }
  for (const std::string& s : out)
    if (s.empty()) bad("stop", "a stop string must not be empty");
  return out;
}

// A list of token ids (`may_be_empty` or not), as vLLM's stop_token_ids and allowed_token_ids.
std::vector<int32_t> token_ids(const ordered_json& body, const char* key, int64_t vocab, bool may_be_empty) {
  std::vector<int32_t> out;
  if (!given(body, key)) return out;
  const ordered_json& v = body[key];
  if (!v.is_array() || (v.empty() && !may_be_empty))
    bad(key, std::string("'") + key + "' must be a" + (may_be_empty ? "" : " non-empty") + " list of token ids");
  for (const auto& id : v) {
    if (!is_token_id(id, static_cast<uint64_t>(vocab)))
      bad(key, std::string("'") + key + "' holds " + input_excerpt(id.dump()) + ", not a token id in [0, " +
                   std::to_string(vocab) + ")");
    out.push_back(id.get<int32_t>());
  }
  return out;
}

// The bytes of whitespace `text` starts with, as Python's str.lstrip() sees
// it (str.isspace(): ASCII's, \x1c-\x1f, and Unicode's spaces and breaks).
size_t leading_whitespace(std::string_view text) {
  static constexpr uint32_t kSpaces[] = {0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                         0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
  size_t at = 0;
  for (size_t next = 0; next < text.size(); at = next) {
    uint32_t c = 0;
    if (!grammar::next_code_point(text, next, c)) break;
    const bool space = (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) ||
                       std::find(std::begin(kSpaces), std::end(kSpaces), c) != std::end(kSpaces);
    if (!space) break;
  }
  return at;
}

// vLLM's bad_words: each word (leading whitespace dropped) as the ids that
// spell it at the start of a text, and, where a space before it gives
// another first id and as many ids, as those too (a word in mid-text);
// vLLM's rule in SamplingParams.update_from_tokenizer.
std::vector<std::vector<int32_t>> bad_words(const ordered_json& body, const ModelBundle& bundle) {
  std::vector<std::vector<int32_t>> out;
  if (!given(body, "bad_words")) return out;
  const ordered_json& v = body["bad_words"];
  if (!v.is_array() || v.size() > kMaxBadWords)
    bad("bad_words", "'bad_words' must be a list of at most " + std::to_string(kMaxBadWords) + " strings");
  if (!bundle.tokenizer) bad("bad_words", "'bad_words' needs the tokenizer (tokenizer.json) to find their ids");
  size_t total = 0;
  for (const auto& w : v) {
    if (!w.is_string())
      bad("bad_words", "'bad_words' must be a list of at most " + std::to_string(kMaxBadWords) + " strings");
    const std::string& text = w.get_ref<const std::string&>();
    const std::string word = text.substr(leading_whitespace(text));
    std::vector<int32_t> ids = word.empty() ? std::vector<int32_t>() : bundle.tokenizer->encode(word);
    if (ids.empty()) bad("bad_words", "a bad word must hold more than whitespace");
    std::vector<int32_t> spaced = bundle.tokenizer->encode(" " + word);
    total += ids.size();
    out.push_back(std::move(ids));
    if (spaced.front() != out.back().front() && spaced.size() == out.back().size()) {
      total += spaced.size();
      out.push_back(std::move(spaced));
    }
    if (total > kMaxBadWordTokens)
      bad("bad_words", "'bad_words' spell more than " + std::to_string(kMaxBadWordTokens) + " tokens in all");
  }
  return out;
}

std::vector<std::pair<int32_t, float>> logit_bias(const ordered_json& body, int64_t vocab) {
  std::vector<std::pair<int32_t, float>> out;
  if (!given(body, "logit_bias")) return out;
  if (!body["logit_bias"].is_object()) bad("logit_bias", "'logit_bias' must be an object of token id -> bias");
  for (const auto& item : body["logit_bias"].items()) {
    const std::string& key = item.key();
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id >= vocab)
      bad("logit_bias",
          "'logit_bias' key '" + input_excerpt(key) + "' is not a token id in [0, " + std::to_string(vocab) + ")");
    if (!item.value().is_number()) bad("logit_bias", "'logit_bias' values must be numbers");
    const double b = item.value().get<double>();
    if (!(b >= -100 && b <= 100)) bad("logit_bias", "'logit_bias' values must be between -100 and 100");
    // One bias per token, the last given ("5" and "05" are one token), as vLLM's dict of ints.
    const auto same = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == id; });
    if (same != out.end()) out.erase(same);
    out.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  }
  return out;
}

void check_json_shape(const std::string& text, const std::string& what) {
  if (const std::optional<std::string> problem = json_shape_problem(text)) throw ApiError(400, what + " " + *problem);
}

// vLLM's priority: any int32, 0 when absent (the server's policy decides whether it may be other).
int32_t requested_priority(const ordered_json& body) {
  return static_cast<int32_t>(
      integer(body, "priority", 0, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

}  // namespace

std::vector<std::string> unknown_fields(const ordered_json& body, bool chat) {
  static const std::set<std::string_view> kBoth = {
      "model", "n", "stream", "stream_options", "logprobs", "prompt_logprobs", "truncate_prompt_tokens",
      // labels and routing: taken and ignored
      "user", "metadata", "store", "service_tier", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
      // vLLM's beam search: refused unless off
      "use_beam_search", "length_penalty",
      // vLLM's: the ids in the answer, and as the log-probabilities' tokens; the answer's id; the tokenizer's
      // post-processor tokens around the prompt
      "return_token_ids", "return_tokens_as_token_ids", "request_id", "add_special_tokens"};
  static const std::set<std::string_view> kChat = {
      "top_logprobs",       "response_format", "functions", "function_call",    "audio", "modalities", "prediction",
      "web_search_options", "verbosity",       "echo",      "include_reasoning"};
  static const std::set<std::string_view> kCompletions = {"prompt", "echo", "best_of", "suffix", "response_format"};
  std::vector<std::string> unknown;
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    if (!is_generation_field(key) && !kBoth.count(key) && !is_structured_output_field(key) &&
        !(chat ? kChat.count(key) || is_chat_prompt_field(key) : kCompletions.count(key)))
      unknown.push_back(key);
  }
  return unknown;
}

namespace {

// OpenAI's API refuses a field it does not know, so a misspelt one (max_token)
// is an error there, not a silent default; so here. Fields that only label or
// route a request are taken and ignored; ones that would change the answer
// and that this server does not implement are refused by name.
void check_field_names(const ordered_json& body, bool chat) {
  const std::vector<std::string> unknown = unknown_fields(body, chat);
  if (!unknown.empty())
    bad(input_excerpt(unknown[0]), "Unrecognized request argument supplied: " + input_excerpt(unknown[0]));
  // The unsupported ones, where their value asks for nothing this server does not do.
  auto refuse_unless = [&](const char* key, bool harmless) {
    if (given(body, key) && !harmless)
      bad(key, std::string("'") + key + "' = " + input_excerpt(body[key].dump()) + " is not supported by this server");
  };
  for (const char* key : {"functions", "function_call", "audio", "web_search_options"}) refuse_unless(key, false);
  refuse_unless("verbosity", body.value("verbosity", ordered_json()) == "medium");  // OpenAI's default: asks nothing
  refuse_unless("modalities", body.value("modalities", ordered_json()) == ordered_json::array({"text"}));
  refuse_unless("suffix", body.value("suffix", ordered_json()) == "");
  // vLLM's beam search, at the values that leave it off.
  refuse_unless("use_beam_search", body.value("use_beam_search", ordered_json()) == false);
  refuse_unless("length_penalty", body.value("length_penalty", ordered_json()) == 1);
  refuse_unless("best_of", body.value("best_of", ordered_json()) == (given(body, "n") ? body["n"] : ordered_json(1)));
}

// The fields both endpoints share: sampling, stops, lengths, n, streaming.
CompletionRequest common_fields(const ordered_json& body, const ServedModel& model, bool chat) {
  check_field_names(body, chat);
  CompletionRequest r;
  const int32_t adapter = requested_adapter(body, model);
  GenerationFields g = parse_generation_fields(body, model.bundle, chat ? model.context : kCompletionsMaxTokens);
  r.options = std::move(g.options);
  r.options.adapter = adapter;
  r.stop = std::move(g.stop);
  r.text = std::move(g.text);
  r.n = static_cast<int>(integer(body, "n", 1, 1, kMaxChoices));
  r.stream = boolean(body, "stream", false);
  if (given(body, "stream_options")) {
    const ordered_json& so = body["stream_options"];
    if (!so.is_object()) bad("stream_options", "'stream_options' must be an object");
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed when 'stream' is true");
    for (const auto& item : so.items())  // include_obfuscation only pads events: nothing to do here
      if (item.key() != "include_usage" && item.key() != "include_obfuscation" &&
          item.key() != "continuous_usage_stats")
        bad("stream_options", "Unrecognized request argument supplied: stream_options." + input_excerpt(item.key()));
    r.include_usage = boolean(so, "include_usage", false);
    // vLLM's: the usage so far in every chunk, when the last has it.
    r.continuous_usage = boolean(so, "continuous_usage_stats", false) && r.include_usage;
  }
  r.return_token_ids = boolean(body, "return_token_ids", false);
  r.tokens_as_ids = boolean(body, "return_tokens_as_token_ids", false);
  if (given(body, "request_id")) {
    const ordered_json& v = body["request_id"];
    if (!v.is_string() || !is_request_id(v.get_ref<const std::string&>()))
      bad("request_id", "'request_id' must be 1 to 256 printable ASCII characters, no spaces");
    r.request_id = v.get<std::string>();
  }
  r.prompt_logprobs = static_cast<int32_t>(integer(body, "prompt_logprobs", -1, 0, kMaxTopLogprobs));
  if (r.prompt_logprobs >= 0 && r.stream)  // as vLLM: they come with the whole answer only
    bad("prompt_logprobs", "'prompt_logprobs' is not available with 'stream'");
  r.options.prompt_logprobs = r.prompt_logprobs;
  return r;
}

// The prompts cut to truncate_prompt_tokens, then checked against the context:
// -1 leaves the room max_tokens asks for (completions' default 16 too; one
// token for chat's, the rest of the context).
void truncate_and_check_length(CompletionRequest& r, const ordered_json& body, const ServedModel& model,
                               const char* what) {
  const bool explicit_length = given(body, "max_tokens") || given(body, "max_completion_tokens");
  const int64_t room = explicit_length || !r.chat ? r.options.max_new_tokens : 1;
  truncate_prompts(body, r.prompts, model.context, std::max<int64_t>(1, model.context - room));
  for (const auto& p : r.prompts) {
    const int64_t len = static_cast<int64_t>(p.size());
    if (len == 0) bad(r.chat ? "messages" : "prompt", "the prompt is empty: at least one token is needed");
    if (len >= model.context)
      throw ContextLengthError(400,
                               "This model's maximum context length is " + std::to_string(model.context) +
                                   " tokens. However, your " + what + " resulted in " + std::to_string(len) +
                                   " tokens.",
                               r.chat ? "messages" : "prompt");
    if (explicit_length && len + r.options.max_new_tokens > model.context)
      throw ContextLengthError(400,
                               "This model's maximum context length is " + std::to_string(model.context) +
                                   " tokens. However, you requested " + std::to_string(len + r.options.max_new_tokens) +
                                   " tokens (" + std::to_string(len) + " in the " + what + ", " +
                                   std::to_string(r.options.max_new_tokens) + " in the completion).",
                               given(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens");
    if (r.options.min_tokens > model.context - len)  // the rest when max_tokens is unset, as vLLM counts it
      bad("min_tokens", "'min_tokens' (" + std::to_string(r.options.min_tokens) + ") must be at most the " +
                            std::to_string(model.context - len) + " tokens the context has left after the " + what);
  }
}

// Message content as the template sees it (`param` names it): a string, or
// OpenAI's list of text parts joined one per line (an assistant's refusal
// parts are its text too, as OpenAI's replies carry them).
ordered_json message_content(const ordered_json& content, const std::string& param, bool assistant) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) bad(param, "'" + param + "' must be a string or a list of text parts");
  std::string text;
  for (const auto& part : content) {
    const char* key =
        part.is_object() && part.contains("type") && assistant && part["type"] == "refusal" ? "refusal" : "text";
    if (!part.is_object() || !part.contains("type") || part["type"] != key || !part.contains(key) ||
        !part[key].is_string())
      bad(param, "'" + param + "' parts must be {\"type\": \"text\", \"text\": ...}" +
                     (assistant ? " or {\"type\": \"refusal\", \"refusal\": ...}" : "") +
                     ": this model reads text only");
    if (&part != &content.front()) text += '\n';
    text += part[key].get<std::string>();
  }
  return text;
}

// OpenAI's predicted outputs, {"type": "content", "content": text or text
// parts}: the text's ids (a <think> in it is the model's token: drafts change
// no answer, whatever they hold), at most a context's worth, for the
// engine's drafts; null when not given.
std::shared_ptr<const Prediction> prediction_ids(const ordered_json& body, const ServedModel& model) {
  if (!given(body, "prediction")) return nullptr;
  const ordered_json& p = body["prediction"];
  if (!p.is_object() || p.value("type", ordered_json()) != "content" || !p.contains("content"))
    bad("prediction", "'prediction' must be {\"type\": \"content\", \"content\": ...}");
  for (const auto& item : p.items())
    if (item.key() != "type" && item.key() != "content")
      bad("prediction", "Unrecognized request argument supplied: prediction." + input_excerpt(item.key()));
  const ordered_json text = message_content(p["content"], "prediction.content", false);
  if (!text.is_string()) bad("prediction.content", "'prediction.content' must be a string or a list of text parts");
  std::vector<int32_t> ids = model.bundle.require_tokenizer().encode(text.get<std::string>());
  if (static_cast<int64_t>(ids.size()) > model.context) ids.resize(static_cast<size_t>(model.context));
  return std::make_shared<const Prediction>(std::move(ids));  // indexed here, not on the engine's thread
}

}  // namespace

GenerationFields parse_generation_fields(const ordered_json& body, const ModelBundle& bundle,
                                         int64_t default_max_tokens) {
  GenerationFields g;
  const int64_t vocab = bundle.model->config().vocab_size;
  SamplingParams& s = g.options.sampling;
  s = bundle.default_sampling();
  s.temperature = static_cast<float>(number(body, "temperature", s.temperature, 0, 2));
  s.top_p = static_cast<float>(number(body, "top_p", s.top_p, 0, 1));
  if (given(body, "top_p") && s.top_p <= 0) bad("top_p", "'top_p' must be greater than 0");
  const int64_t top_k = integer(body, "top_k", s.top_k, -1, std::numeric_limits<int32_t>::max());  // >= vocab: off
  s.top_k = static_cast<int>(top_k < 0 ? 0 : top_k);                                               // -1 = off, as vLLM
  s.min_p = static_cast<float>(number(body, "min_p", s.min_p, 0, 1));
  s.presence_penalty = static_cast<float>(number(body, "presence_penalty", s.presence_penalty, -2, 2));
  s.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", s.frequency_penalty, -2, 2));
  s.repetition_penalty = static_cast<float>(number(body, "repetition_penalty", s.repetition_penalty, 0, 10));
  if (given(body, "repetition_penalty") && s.repetition_penalty <= 0)
    bad("repetition_penalty", "'repetition_penalty' must be greater than 0");
  s.logit_bias = logit_bias(body, vocab);
  if (given(body, "seed")) {
    const ordered_json& seed = body["seed"];
    // Any 64-bit integer (negative ones as their two's complement), or a float with such a value.
    // -2^63 itself comes as an integer: a float of that value is what the parser makes of an
    // integer below the range (-9223372036854775809), as 2^64 is of one above it.
    constexpr double kTwo63 = 9223372036854775808.0;
    if (integral_float(seed) && seed.get<double>() > -kTwo63 && seed.get<double>() < 2 * kTwo63)
      s.seed = seed.get<double>() < 0 ? static_cast<uint64_t>(static_cast<int64_t>(seed.get<double>()))
                                      : static_cast<uint64_t>(seed.get<double>());
    else if (seed.is_number_integer())
      s.seed = seed.is_number_unsigned() ? seed.get<uint64_t>() : static_cast<uint64_t>(seed.get<int64_t>());
    else
      bad("seed", "'seed' must be a 64-bit integer");
  } else {
    s.seed = std::random_device{}() * 0x100000000ull + std::random_device{}();  // unseeded: each request differs
  }
  g.stop = stop_strings(body);
  // Both names checked: the one not used would otherwise pass unread, whatever it held.
  // 0 with echo: the prompt and its log-probabilities alone, as OpenAI's legacy completions allow
  // (chat: the final assistant message alone).
  const int64_t least = body.contains("echo") && body["echo"] == true ? 0 : 1;
  const int64_t max_tokens =
      integer(body, "max_tokens", default_max_tokens, least, std::numeric_limits<int32_t>::max());
  g.options.max_new_tokens =
      integer(body, "max_completion_tokens", max_tokens, least, std::numeric_limits<int32_t>::max());
  if (given(body, "max_tokens") && g.options.max_new_tokens != max_tokens)
    bad("max_tokens", "'max_tokens' (" + std::to_string(max_tokens) + ") and 'max_completion_tokens' (" +
                          std::to_string(g.options.max_new_tokens) + ") differ: give one of them");
  g.options.eos_ids = bundle.eos_ids();
  g.options.ignore_eos = boolean(body, "ignore_eos", false);
  g.options.stop_ids = token_ids(body, "stop_token_ids", vocab, true);
  g.options.allowed_ids = token_ids(body, "allowed_token_ids", vocab, false);
  g.options.bad_words = bad_words(body, bundle);
  g.options.min_tokens = integer(body, "min_tokens", 0, 0, std::numeric_limits<int32_t>::max());
  // As vLLM, against the default max_tokens too: such a request could only run to its limit.
  if (g.options.min_tokens > g.options.max_new_tokens)
    bad("min_tokens", "'min_tokens' (" + std::to_string(g.options.min_tokens) + ") must be at most max_tokens (" +
                          std::to_string(g.options.max_new_tokens) +
                          (given(body, "max_tokens") || given(body, "max_completion_tokens") ? ")" : ", its default)"));
  g.options.cache_salt = requested_cache_salt(body);
  g.options.priority = requested_priority(body);
  g.text.min_tokens = g.options.min_tokens;
  g.text.include_stop_string = boolean(body, "include_stop_str_in_output", false);
  g.text.skip_special_tokens = boolean(body, "skip_special_tokens", true);
  boolean(body, "spaces_between_special_tokens", true);  // checked; byte-level BPE puts no spaces to leave out
  g.text.stop_ids = g.options.stop_ids;
  if (!g.options.ignore_eos)
    g.text.stop_ids.insert(g.text.stop_ids.end(), g.options.eos_ids.begin(), g.options.eos_ids.end());
  // Before min_tokens, eos and the stop ids are masked: allowed ids that are all of them leave nothing to draw.
  const GenerationOptions& o = g.options;
  const auto ends = [&](int32_t id) {
    return (!o.ignore_eos && std::find(o.eos_ids.begin(), o.eos_ids.end(), id) != o.eos_ids.end()) ||
           std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end();
  };
  const auto banned = [&](int32_t id) {
    return std::find(o.bad_words.begin(), o.bad_words.end(), std::vector<int32_t>{id}) != o.bad_words.end();
  };
  if (!o.allowed_ids.empty() && std::all_of(o.allowed_ids.begin(), o.allowed_ids.end(), banned))
    bad("bad_words", "'bad_words' ban every id 'allowed_token_ids' allows: nothing could be drawn");
  if (o.min_tokens > 0 && !o.allowed_ids.empty() && std::all_of(o.allowed_ids.begin(), o.allowed_ids.end(), ends))
    bad("min_tokens",
        "'min_tokens' holds back eos and the stop ids, and 'allowed_token_ids' allows only those: "
        "nothing could be drawn");
  return g;
}

std::string requested_cache_salt(const ordered_json& body) {
  if (!given(body, "cache_salt")) return "";
  if (!body["cache_salt"].is_string() || body["cache_salt"].get_ref<const std::string&>().empty())
    bad("cache_salt", "'cache_salt' must be a non-empty string");
  return body["cache_salt"].get<std::string>();
}

bool is_request_id(std::string_view id) {
  const auto printable = [](char c) { return c > ' ' && c < 0x7f; };  // it goes into logs and headers as it is
  return !id.empty() && id.size() <= 256 && std::all_of(id.begin(), id.end(), printable);
}

bool is_generation_field(std::string_view key) {
  for (const char* field : kGenerationFields)
    if (key == field) return true;
  return false;
}

// Where the reply's <think> block is, from the generation prompt: left open
// there (Open); opened and closed by the template (None: thinking is off, as
// Qwen3's enable_thinking false writes it, and the reply is all answer); or
// not there (MayOpen).
ReasoningBlock reply_reasoning(const ChatTemplate& chat_template, ChatTemplateInput in, const std::string& rendered) {
  in.add_generation_prompt = false;
  const std::string without_prompt = chat_template.render(in);
  // Only the generation prompt counts, not a "<think>" the conversation itself mentions.
  const size_t common = static_cast<size_t>(
      std::mismatch(rendered.begin(), rendered.end(), without_prompt.begin(), without_prompt.end()).first -
      rendered.begin());
  const std::string_view generation_prompt = std::string_view(rendered).substr(common);
  const size_t open = generation_prompt.rfind("<think>");
  if (open == std::string::npos) return ReasoningBlock::MayOpen;
  return generation_prompt.find("</think>", open) == std::string::npos ? ReasoningBlock::Open : ReasoningBlock::None;
}

ordered_json chat_messages(const ordered_json& body) {
  if (!given(body, "messages") || !body["messages"].is_array())
    bad("messages", "'messages' must be a list of messages");
  if (body["messages"].empty()) bad("messages", "'messages' must not be empty");
  ordered_json messages = ordered_json::array();
  size_t i = 0;
  for (const auto& m : body["messages"]) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(param, "'" + param + "' must be an object");
    if (!m.contains("role") || !m["role"].is_string()) bad(param + ".role", "'" + param + ".role' must be a string");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "developer" &&
        role != "function")
      bad(param + ".role", "'" + param + ".role' is '" + input_excerpt(role) +
                               "'; expected one of system, developer, user, assistant, tool, function");
    ordered_json out = m;
    if (role == "developer") out["role"] = "system";  // OpenAI's newer name for the system role
    if (role == "function") out["role"] = "tool";     // ... and its older one for a tool's result
    // The deprecated single function_call is a tool call to the template.
    std::string calls = param + ".tool_calls";
    if (given(m, "function_call")) {
      if (role != "assistant" || given(m, "tool_calls"))
        bad(param + ".function_call", "'" + param +
                                          ".function_call' is allowed only on an assistant message "
                                          "without tool_calls");
      out["tool_calls"] = ordered_json::array({{{"type", "function"}, {"function", m["function_call"]}}});
      out.erase("function_call");
      calls = param + ".function_call";
    }
    if (m.contains("content"))
      out["content"] =
          message_content(m["content"], "messages[" + std::to_string(i) + "].content", role == "assistant");
    if (!out.contains("content") || out["content"].is_null()) {
      // OpenAI allows no content only beside tool calls (its own replies carry "content": null
      // there); templates read content as a string, so it becomes "", as vLLM and llama-server do.
      if (!(role == "assistant" && given(out, "tool_calls")))
        bad(param + ".content",
            "'" + param + ".content' is missing (null is allowed only beside tool_calls or function_call)");
      out["content"] = "";
    }
    if (given(out, "tool_calls")) {  // null: a client's own reply sent back as its SDK dumped it
      if (!out["tool_calls"].is_array()) bad(calls, "'" + calls + "' must be a list");
      for (auto& call : out["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
          bad(calls, "each tool call must have a 'function' object");
        auto& f = call["function"];
        // Arguments "" (clients send that for a tool without parameters) are
        // {}, as vLLM has them: the template would print `"arguments": }`.
        if (f.contains("arguments") && f["arguments"] == "") f["arguments"] = ordered_json::object();
        // What the template prints: a name, and arguments (a JSON string or object).
        if (!f.contains("name") || !f["name"].is_string() || f["name"].get_ref<const std::string&>().empty() ||
            !f.contains("arguments") || !(f["arguments"].is_string() || f["arguments"].is_object()))
          bad(calls, "'" + calls + "' needs a function 'name' (a non-empty string) and 'arguments' (a JSON string)");
        // OpenAI sends arguments as a JSON string; the template prints objects with tojson.
        if (f.contains("arguments") && f["arguments"].is_string()) {
          const std::string& text = f["arguments"].get_ref<const std::string&>();
          check_json_shape(text, "'" + calls + "' arguments");  // JSON too, inside a string
          ordered_json args = ordered_json::parse(text, nullptr, false);
          if (!args.is_discarded()) f["arguments"] = args;
        }
      }
    }
    messages.push_back(std::move(out));
    ++i;
  }
  return messages;
}

ordered_json parse_json_body(const std::string& body, const std::string& what) {
  // JSON has no raw NUL (strings escape it), and nlohmann stops reading at one.
  if (const size_t nul = body.find('\0'); nul != std::string::npos)
    throw ApiError(400, what + " is not valid JSON: a NUL byte at offset " + std::to_string(nul));
  check_json_shape(body, what);
  ordered_json j;
  try {
    j = ordered_json::parse(body);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number too large
    throw ApiError(400, what + " is not valid JSON: " + input_excerpt(e.what(), 256));
  }
  if (!j.is_object()) throw ApiError(400, what + " must be a JSON object");
  return j;
}

bool is_chat_prompt_field(std::string_view key) {
  for (const char* field :
       {"messages", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs", "reasoning_effort",
        "add_generation_prompt", "continue_final_message", "thinking_token_budget"})
    if (key == field) return true;
  return false;
}

namespace {

// apply_chat_template refuses them twice too (a keyword given twice); here
// they would replace what was checked.
[[noreturn]] void refuse_chat_template_kwarg(const std::string& name) {
  bad("chat_template_kwargs", "'chat_template_kwargs' may not set '" + name + "': the request sets it (its own field)");
}

}  // namespace

void read_chat_template_kwargs(const ordered_json& kwargs, ChatTemplateInput& in) {
  for (const auto& item : kwargs.items()) {
    if (item.key() == "enable_thinking" && item.value().is_null()) {
      in.enable_thinking.reset();
      in.extra_variables["enable_thinking"] = nullptr;  // None, as transformers passes it (a default(...) keeps it)
    } else if (item.key() == "enable_thinking") {
      if (!item.value().is_boolean()) bad("chat_template_kwargs", "'enable_thinking' must be true, false or null");
      in.enable_thinking = item.value().get<bool>();
      in.extra_variables.erase("enable_thinking");  // a None an earlier reading into `in` set
    } else if (item.key() == "messages" || item.key() == "tools" || item.key() == "add_generation_prompt") {
      refuse_chat_template_kwarg(item.key());
    } else {
      in.extra_variables[item.key()] = item.value();
    }
  }
}

ChatPrompt render_chat_prompt(const ordered_json& body, const ModelBundle& bundle, size_t max_tokens) {
  ChatPrompt r;
  ChatTemplateInput in;
  in.messages = chat_messages(body);
  // continue_final_message (vLLM's; llama-server does it by itself): the
  // reply goes on with the final assistant message's text ("prefill")
  // instead of starting a new one.
  const bool continue_final = boolean(body, "continue_final_message", false);
  in.add_generation_prompt = boolean(body, "add_generation_prompt", !continue_final);
  if (continue_final && in.add_generation_prompt)
    bad("add_generation_prompt",
        "'continue_final_message' goes on with the final message; "
        "'add_generation_prompt' would start a new one: not both");
  if (continue_final) {
    const ordered_json& last = in.messages.back();
    const std::string param = "messages[" + std::to_string(in.messages.size() - 1) + "]";
    if (last["role"] != "assistant" || !last["content"].is_string() ||
        last["content"].get_ref<const std::string&>().empty() || given(last, "tool_calls"))
      bad("continue_final_message",
          "'continue_final_message' needs a final assistant message with text (and no "
          "tool calls) to continue; " +
              param + " is not one");
  }
  if (given(body, "tools")) {
    if (!body["tools"].is_array()) bad("tools", "'tools' must be a list");
    for (const auto& t : body["tools"])
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object())
        bad("tools", "each tool must be {\"type\": \"function\", \"function\": {...}}");
    // tool_choice "none": the model is not told of the tools, so it calls none.
    if (!body["tools"].empty() && body.value("tool_choice", ordered_json()) != "none") in.tools = body["tools"];
  }
  const bool parallel_tool_calls = boolean(body, "parallel_tool_calls", true);
  const bool named_tool = body.value("tool_choice", ordered_json()).is_object();
  r.tool_calls = in.tools.is_null()                   ? ToolCalls::None
                 : parallel_tool_calls && !named_tool ? ToolCalls::Any
                                                      : ToolCalls::One;
  // The server's defaults (--default-chat-template-kwargs), each replaced by the request's of the same name.
  ordered_json kwargs = bundle.default_chat_template_kwargs;
  if (given(body, "chat_template_kwargs")) {
    const ordered_json& kw = body["chat_template_kwargs"];
    if (!kw.is_object()) bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    for (const auto& item : kw.items()) {
      if (item.key() == "reasoning_effort" && given(body, "reasoning_effort")) refuse_chat_template_kwarg(item.key());
      kwargs[item.key()] = item.value();
    }
  }
  read_chat_template_kwargs(kwargs, in);
  // OpenAI's effort levels, passed to the template as vLLM does (Qwen3's
  // ignores it: its thinking is on or off, chat_template_kwargs.enable_thinking).
  if (given(body, "reasoning_effort")) {
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high", "xhigh"};
    const ordered_json& effort = body["reasoning_effort"];
    if (!effort.is_string() || !kEfforts.count(effort.get<std::string>()))
      bad("reasoning_effort", "'reasoning_effort' must be one of none, minimal, low, medium, high, xhigh; got " +
                                  input_excerpt(effort.dump()));
    in.extra_variables["reasoning_effort"] = effort;
  }
  const ChatTemplate* chat_template = nullptr;
  try {
    chat_template = &bundle.require_chat_template();
  } catch (const Error& e) {
    throw ApiError(400, std::string(e.what()) + " (a plain prompt needs none)");
  }
  std::string rendered;
  ReasoningBlock reasoning = ReasoningBlock::MayOpen;
  try {
    rendered = chat_template->render(in);
    if (!continue_final) reasoning = reply_reasoning(*chat_template, in, rendered);
  } catch (const Error& e) {
    bad("messages", std::string("the chat template refused the conversation: ") + e.what());
  }
  if (continue_final) {  // the prompt ends where the final message's text does, as vLLM cuts it
    const std::string& text = in.messages.back()["content"].get_ref<const std::string&>();
    const size_t at = rendered.rfind(text);
    if (at == std::string::npos)
      bad("continue_final_message",
          "'continue_final_message': the chat template does not write the final message's text as given "
          "(it changes it), so there is no place to continue from");
    rendered.resize(at + text.size());
    const size_t open = text.rfind("<think>");
    if (open != std::string::npos && text.find("</think>", open) == std::string::npos) reasoning = ReasoningBlock::Open;
  }
  r.starts_in_reasoning = reasoning == ReasoningBlock::Open;
  if (!in.tools.is_null() && teaches_xml_tool_calls(*chat_template))
    r.xml_tools = std::make_shared<const ordered_json>(in.tools);
  r.grammar = parse_reply_grammar(body, bundle, reasoning);
  // vLLM's thinking_token_budget (-1: none), counted in Qwen3's <think> block.
  r.thinking.tokens = integer(body, "thinking_token_budget", -1, -1, std::numeric_limits<int32_t>::max());
  if (r.thinking.tokens >= 0) {
    const Tokenizer& tok = bundle.require_tokenizer();
    r.thinking.open_id = tok.token_to_id("<think>").value_or(-1);
    r.thinking.close_id = tok.token_to_id("</think>").value_or(-1);
    if (r.thinking.open_id < 0 || r.thinking.close_id < 0)
      bad("thinking_token_budget",
          "'thinking_token_budget': this model's tokenizer has no <think> and </think> "
          "tokens to count its reasoning by");
    r.thinking.starts_open = r.starts_in_reasoning;
  }
  if (continue_final && r.grammar)
    bad("continue_final_message",
        "'continue_final_message' cannot be constrained: response_format, structured_outputs and a "
        "required tool_choice describe a whole reply, and this one began in the request");
  auto ids = bundle.require_tokenizer().encode_at_most(rendered, max_tokens);
  r.over_limit = !ids;
  if (ids) r.ids = std::move(*ids);
  return r;
}

void truncate_prompts(const ordered_json& body, std::vector<std::vector<int32_t>>& prompts, int64_t context,
                      int64_t room) {
  const char* key = "truncate_prompt_tokens";
  if (!given(body, key)) return;
  const int64_t k = integer(body, key, 0, -1, context);
  if (k == 0) bad(key, "'truncate_prompt_tokens' must be -1 (as many as the context holds) or at least 1, got 0");
  const size_t keep = static_cast<size_t>(k == -1 ? room : k);
  for (std::vector<int32_t>& ids : prompts)
    if (ids.size() > keep) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
}

int32_t requested_adapter(const ordered_json& body, const ServedModel& model) {
  if (!body.contains("model") || body["model"].is_null())
    return -1;  // llama-server and vLLM serve their one model to requests that name none
  if (!body["model"].is_string()) bad("model", "'model' must be a string");
  const std::string& name = body["model"].get_ref<const std::string&>();
  if (name == model.name) return -1;
  if (const std::optional<int32_t> adapter = model.bundle.model->find_adapter(name)) return *adapter;
  std::string served = "'" + model.name + "'";
  for (const Qwen3Model::AdapterName& a : model.bundle.model->adapter_names())
    if (a.listed) served += ", '" + a.name + "'";
  throw ApiError(404, "The model '" + input_excerpt(name) + "' does not exist; the models are " + served, "model",
                 "invalid_request_error");
}

PromptOnlyOptions requested_prompt_only_options(const ordered_json& body, const ServedModel& model) {
  return {requested_adapter(body, model), requested_cache_salt(body), requested_priority(body)};
}

std::string served_name(const ServedModel& model, int32_t adapter) {
  return adapter < 0 ? model.name : model.bundle.model->adapter_names().at(static_cast<size_t>(adapter)).name;
}

CompletionRequest parse_chat_request(const ordered_json& body, const ServedModel& model) {
  CompletionRequest r = common_fields(body, model, true);
  r.chat = true;
  const bool logprobs = boolean(body, "logprobs", false);
  const int64_t top = integer(body, "top_logprobs", 0, 0, kMaxTopLogprobs);
  if (given(body, "top_logprobs") && !logprobs) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  r.options.logprobs = logprobs ? static_cast<int32_t>(top) : -1;
  ChatPrompt prompt = render_chat_prompt(body, model.bundle);
  r.include_reasoning = boolean(body, "include_reasoning", true);
  r.options.prediction = prediction_ids(body, model);
  r.echo = boolean(body, "echo", false);
  if (r.echo) {  // the messages were checked by the render
    const ordered_json last = chat_messages(body).back();
    if (last["role"] == "assistant") r.echo_text = last["content"].get<std::string>();
  }
  r.starts_in_reasoning = prompt.starts_in_reasoning;
  r.tool_calls = prompt.tool_calls;
  r.xml_tools = std::move(prompt.xml_tools);
  r.options.grammar = std::move(prompt.grammar);
  r.options.thinking = prompt.thinking;
  // vLLM's add_special_tokens: false by default for chat (the template writes the special tokens).
  if (boolean(body, "add_special_tokens", false))
    prompt.ids = model.bundle.require_tokenizer().with_special_tokens(std::move(prompt.ids));
  r.prompts.push_back(std::move(prompt.ids));
  truncate_and_check_length(r, body, model, "messages");
  return r;
}

CompletionRequest parse_chat_request_fitting(const ordered_json& body, const ServedModel& model) {
  if (!given(body, "messages") || !body["messages"].is_array()) return parse_chat_request(body, model);
  const ordered_json& messages = body["messages"];
  size_t first = 0;  // the leading system messages stay
  while (first < messages.size() && messages[first].is_object() &&
         (messages[first].value("role", "") == "system" || messages[first].value("role", "") == "developer"))
    ++first;
  const size_t droppable = messages.size() > first + 1 ? messages.size() - first - 1 : 0;
  // The request without the `dropped` messages after the system ones, or nothing when it does not fit.
  auto without = [&](size_t dropped) -> std::optional<CompletionRequest> {
    ordered_json cut = body;
    ordered_json& list = cut["messages"];
    auto at = list.erase(list.begin() + static_cast<std::ptrdiff_t>(first),
                         list.begin() + static_cast<std::ptrdiff_t>(first + dropped));
    // With their calls gone, the tool results after them go too (a hunt finding: the model saw an answer to
    // no call, which the Responses API refuses as input).
    if (dropped > 0)
      while (std::next(at) != list.end() && at->is_object() && at->value("role", "") == "tool") at = list.erase(at);
    try {
      return parse_chat_request(cut, model);
    } catch (const ContextLengthError&) {
      if (dropped == droppable) throw;  // the last message alone does not fit
      return std::nullopt;
    }
  };
  if (auto whole = without(0)) return std::move(*whole);
  // Fewer tokens as more are dropped: the fewest that fit, by bisection (a render each).
  size_t lo = 0, hi = droppable;  // lo does not fit, hi does
  std::optional<CompletionRequest> fitting = without(hi);
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto r = without(mid)) {
      hi = mid;
      fitting = std::move(r);
    } else {
      lo = mid;
    }
  }
  return std::move(*fitting);
}

CompletionRequest parse_completion_request(const ordered_json& body, const ServedModel& model) {
  CompletionRequest r = common_fields(body, model, false);
  r.options.logprobs = static_cast<int32_t>(integer(body, "logprobs", -1, 0, kMaxTopLogprobs));
  r.echo = boolean(body, "echo", false);
  if (r.echo) r.options.prompt_logprobs = std::max(r.options.prompt_logprobs, r.options.logprobs);
  if (!given(body, "prompt")) bad("prompt", "'prompt' is missing");
  const ordered_json& p = body["prompt"];
  const int64_t vocab = model.bundle.model->config().vocab_size;
  // `path` names the list in the message: prompt, prompt[1], ...
  auto ids = [&](const ordered_json& list, const std::string& path) {
    std::vector<int32_t> out;
    for (size_t k = 0; k < list.size(); ++k) {
      const ordered_json& id = list[k];
      if (!is_token_id(id, static_cast<uint64_t>(vocab)))
        bad("prompt", "'prompt' token ids must be integers in [0, " + std::to_string(vocab) + "); " + path + "[" +
                          std::to_string(k) + "] is " + input_excerpt(id.dump()));
      out.push_back(id.get<int32_t>());
    }
    return out;
  };
  const Tokenizer& tok = model.bundle.require_tokenizer();
  // vLLM's add_special_tokens, true by default for a text prompt as HF's tokenizer(text) (Qwen3's post-processor
  // adds none); token ids are taken as given.
  const bool add_special = boolean(body, "add_special_tokens", true);
  auto encode = [&](const ordered_json& text) {
    std::vector<int32_t> ids = tok.encode(text.get<std::string>());
    return add_special ? tok.with_special_tokens(std::move(ids)) : ids;
  };
  if (p.is_string()) {
    r.prompts.push_back(encode(p));
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    r.prompts.push_back(ids(p, "prompt"));
  } else if (p.is_array() && !p.empty()) {
    for (size_t k = 0; k < p.size(); ++k) {
      const ordered_json& item = p[k];
      if (item.is_string())
        r.prompts.push_back(encode(item));
      else if (item.is_array())
        r.prompts.push_back(ids(item, "prompt[" + std::to_string(k) + "]"));
      else
        bad("prompt", "'prompt' must be a string, a list of token ids, or a list of either");
    }
  } else {
    bad("prompt", "'prompt' must be a string, a list of token ids, or a list of either");
  }
  if (r.prompts.size() * static_cast<size_t>(r.n) > static_cast<size_t>(kMaxChoices))
    bad("prompt", "at most " + std::to_string(kMaxChoices) + " completions (prompts x n) per request");
  r.options.grammar = parse_reply_grammar(body, model.bundle, ReasoningBlock::None);
  truncate_and_check_length(r, body, model, "prompt");
  return r;
}

}  // namespace qinfer::server
