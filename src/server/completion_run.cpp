#include "server/completion_run.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <optional>
#include <utility>

#include "runtime/text_stream.h"
#include "server/api_error.h"
#include "util/utf8.h"

namespace qinfer::server {

using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct CompletionRun::Choice {
  size_t index = 0, prompt_index = 0;
  std::shared_ptr<engine::RequestStream> stream;
  std::unique_ptr<TextStream> text;
  std::optional<ChatOutputParser> parser;
  std::string pieces;                            // text the TextStream emitted since the last poll
  std::vector<int32_t> ids;                      // received, not yet in the text
  std::vector<TokenLogprobs> received_logprobs;  // with them, when asked for
  std::vector<TokenLogprobs> unsent_logprobs;    // of consumed tokens, for the next chunk
  std::vector<int32_t> token_ids, unsent_ids;    // consumed ids (return_token_ids), those not yet streamed
  bool prompt_ids_sent = false;                  // streamed completions with return_token_ids: its first chunk has them
  std::vector<TokenLogprobs> logprobs;           // of every consumed token
  // Answer logprobs only: those of tokens whose text has not come out yet,
  // and where in the content each one sent came out (unsent: of the next chunk's).
  std::vector<TokenLogprobs> held_logprobs;
  std::vector<int64_t> content_at, unsent_content_at;
  int64_t text_offset = 0;       // streamed completions: characters before the next token
  int64_t tokens = 0;            // ids the text saw: the completion's tokens
  int64_t reasoning_tokens = 0;  // of them, the <think> block's (chat)
  bool stopped = false;          // a stop string ended it
  bool echoed = false;           // echo: the prompt is in the text
  bool done = false;
  int tool_calls = 0;  // announced in the stream
  std::string finish_reason;
  ordered_json stop_reason;  // vLLM's: the stop string or stop id that ended it, else null
  ChatDelta total;           // everything sent
  GenerationResult result;
};

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string sse(const ordered_json& j) {
  return "data: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace

CompletionRun::CompletionRun(const CompletionRequest& request, const ServedModel& model, engine::EngineLoop& loop,
                             Metrics& metrics, std::string id, std::chrono::milliseconds status_wait)
    : request_(request),
      model_(model),
      metrics_(metrics),
      id_(std::move(id)),
      created_(static_cast<int64_t>(std::time(nullptr))),
      start_(Clock::now()) {
  const Tokenizer& tok = model.bundle.require_tokenizer();
  // A status (400, 500) can be sent only before the answer begins, but a
  // request that waits longer (queued, a long prompt) waits inside the
  // answer, whose writes notice a client that left.
  const auto answer_by = start_ + status_wait;
  auto started = [&](Choice& c) {
    auto state = engine::RequestStream::State::Running;
    for (auto now = Clock::now(); state == engine::RequestStream::State::Running && c.ids.empty() && now < answer_by;
         now = Clock::now()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(answer_by - now);
      state = c.stream->wait(c.ids, std::min<std::chrono::milliseconds>(50ms, left), &c.received_logprobs);
    }
    if (state == engine::RequestStream::State::Failed) {
      for (auto& other : choices_) other->stream->cancel();
      throw failure_of(*c.stream);
    }
  };
  // A request larger than the whole queue would get 503 (retry later) forever.
  if (const int64_t choices = static_cast<int64_t>(request.prompts.size()) * request.n; choices > loop.capacity())
    throw ApiError(400,
                   "this request asks for " + std::to_string(choices) +
                       " completions (prompts x n); the server holds at most " + std::to_string(loop.capacity()) +
                       " at once (running and waiting)",
                   request.n > 1 ? "n" : "prompt");
  std::optional<engine::EngineLoop::Reservation> room =
      loop.reserve(static_cast<int64_t>(request.prompts.size()) * request.n, request.options.adapter);
  if (!room) throw ApiError(503, kBusy);
  for (size_t p = 0; p < request.prompts.size(); ++p)
    for (int i = 0; i < request.n; ++i) {
      auto c = std::make_unique<Choice>();
      c->index = choices_.size();
      c->prompt_index = p;
      Choice* self = c.get();
      c->text = std::make_unique<TextStream>(
          tok, request.stop,
          [self](std::string_view piece) {
            self->pieces += piece;
            return true;
          },
          request.text);
      if (request.chat) c->parser.emplace(request.starts_in_reasoning, request.tool_calls, request.xml_tools);
      GenerationOptions options = request.options;
      options.sampling.seed += static_cast<uint64_t>(i);
      c->stream = loop.submit(request.prompts[p], options, &*room);
      if (!c->stream) {
        for (auto& other : choices_) other->stream->cancel();
        throw ApiError(503, kBusy);
      }
      choices_.push_back(std::move(c));
      // The other choices of a prompt start once the first has computed it:
      // they take its full blocks from the prefix cache instead of computing them again.
      if (i == 0 && request.n > 1) started(*choices_.back());
    }
  for (auto& c : choices_) started(*c);
}

ApiError CompletionRun::failure_of(const engine::RequestStream& s) const {
  const std::string why = s.error();
  switch (s.failure()) {
    case engine::RequestStream::Failure::Refused: {
      const GenerationOptions& o = request_.options;
      // Its adapter unloaded after the name was read: the model it named is gone, as vLLM's 404 says.
      if (o.adapter >= 0 && why.find("was unloaded") != std::string::npos) return ApiError(404, why, "model");
      if (o.grammar && why.find("grammar") != std::string::npos) return ApiError(400, why, o.grammar->source);
      if (why.find("nothing can be drawn") != std::string::npos)
        return ApiError(400, why,
                        !o.bad_words.empty()     ? "bad_words"
                        : !o.allowed_ids.empty() ? "allowed_token_ids"
                                                 : "min_tokens");
      return ApiError(400, why, request_.chat ? "messages" : "prompt");
    }
    case engine::RequestStream::Failure::ShutDown:
      return ApiError(503, why);
    case engine::RequestStream::Failure::Lost:
      break;
  }
  return ApiError(500, why);  // the engine failed running it (NaN logits)
}

CompletionRun::~CompletionRun() {
  for (auto& c : choices_)
    if (!c->done) c->stream->cancel();
}

// Each token's text goes through the reply's split at once: a token the
// split reads inside the <think> block, or one that opens or closes it, is a
// reasoning token (usage counts them); the same for a tool call's.
enum class CompletionRun::Part { Answer, Reasoning, ToolCall };
struct CompletionRun::Split {
  Part part = Part::Answer;
  size_t content_before = 0;  // d.content's size before it
  bool made_call = false;     // it ended a tool call, or made one
  bool dropped = false;       // its text is in no part (whitespace after a tag)
};

ChatDelta CompletionRun::poll(Choice& c, std::chrono::milliseconds timeout, size_t max_tokens) {
  const auto state = c.stream->wait(c.ids, c.ids.empty() ? timeout : 0ms, &c.received_logprobs);
  note_arrivals(c);
  ChatDelta d;
  if (request_.echo && !c.echoed &&
      (request_.chat || !c.ids.empty() || state == engine::RequestStream::State::Finished))
    echo_prompt(c, d);
  const size_t take = std::min(max_tokens, c.ids.size());
  take_tokens(c, take, d);
  if (c.stopped) {  // what came after the stop string is not the answer's
    c.ids.clear();
    c.received_logprobs.clear();
  } else {
    c.ids.erase(c.ids.begin(), c.ids.begin() + static_cast<ptrdiff_t>(take));
    c.received_logprobs.erase(
        c.received_logprobs.begin(),
        c.received_logprobs.begin() + static_cast<ptrdiff_t>(std::min(take, c.received_logprobs.size())));
  }
  // The stream ended, and its tokens are all in the text: the choice is done.
  if (state != engine::RequestStream::State::Running && c.ids.empty())
    end_choice(c, state, d);
  else if (!c.pieces.empty())
    settle(c, d, split(c, d));
  ChatDelta copy = d;
  c.total.append(std::move(copy));
  return d;
}

// As the engine gave the tokens (a hunt finding: timed here, the tokens that came together with the first, or in
// one wait, were left out of the inter-token latencies or shared one).
void CompletionRun::note_arrivals(Choice& c) {
  if (summary_.ttft_s < 0)
    if (const auto first = c.stream->first_token_time()) summary_.ttft_s = seconds_between(start_, *first);
  for (const double gap : c.stream->take_token_gaps()) metrics_.record_inter_token(gap);
}

void CompletionRun::echo_prompt(Choice& c, ChatDelta& d) {
  c.echoed = true;
  if (request_.chat) {  // the final assistant message's text, before the reply's
    d.content = request_.echo_text;
    return;
  }
  // The prompt's text, as the completion shows tokens (special ones left
  // out unless skip_special_tokens is false), outside the stop strings' reach; its first token has no
  // log-probability (nothing precedes it): NaN here, null in the answer.
  if (summary_.ttft_s < 0) summary_.ttft_s = seconds_between(start_, Clock::now());  // the first text sent
  const std::vector<int32_t>& prompt = request_.prompts[c.prompt_index];
  d.content = model_.bundle.require_tokenizer().decode(prompt, request_.text.skip_special_tokens);
  if (request_.options.logprobs < 0) return;
  std::vector<TokenLogprobs> echo = c.stream->prompt_logprobs();
  for (TokenLogprobs& l : echo)  // prompt_logprobs may have asked the engine for more
    l.top.resize(std::min(l.top.size(), static_cast<size_t>(request_.options.logprobs)));
  echo.insert(echo.begin(),
              TokenLogprobs{.id = prompt[0], .logprob = std::numeric_limits<float>::quiet_NaN(), .top = {}});
  c.unsent_logprobs.insert(c.unsent_logprobs.end(), echo.begin(), echo.end());
  c.logprobs.insert(c.logprobs.end(), echo.begin(), echo.end());
}

CompletionRun::Split CompletionRun::split(Choice& c, ChatDelta& d) const {
  Split s{.content_before = d.content.size()};
  const bool had_text = !c.pieces.empty();
  if (!c.parser) {
    d.content += c.pieces;
  } else {
    const bool was_reasoning = c.parser->in_reasoning(), was_call = c.parser->in_tool_call();
    const int calls = c.parser->calls_made(), closed = c.parser->calls_closed();
    d.append(c.parser->push(c.pieces));
    if (was_reasoning || c.parser->in_reasoning())
      s.part = Part::Reasoning;
    else if (was_call || c.parser->in_tool_call())
      s.part = Part::ToolCall;
    // A call announced, or one that ended (a streamed call was announced before: the tokens since are its too).
    s.made_call =
        (was_call && !c.parser->in_tool_call()) || c.parser->calls_made() > calls || c.parser->calls_closed() > closed;
    s.dropped = had_text && s.part == Part::Answer && d.content.size() == s.content_before && !c.parser->holds_text();
  }
  c.pieces.clear();
  return s;
}

// Answer logprobs only (the Responses API's): each token waits until text
// comes out, and goes with it, at its place in the content (so to the
// message item that holds it). Those no text follows (the end token) are
// no text's.
void CompletionRun::settle(Choice& c, const ChatDelta& d, const Split& s) const {
  if (!request_.answer_logprobs_only || d.content.size() == s.content_before) return;
  const auto at = static_cast<int64_t>(c.total.content.size() + s.content_before);
  for (TokenLogprobs& l : c.held_logprobs) {
    c.unsent_logprobs.push_back(l);
    c.logprobs.push_back(std::move(l));
    c.unsent_content_at.push_back(at);
    c.content_at.push_back(at);
  }
  c.held_logprobs.clear();
}

// The first n received ids into the text, each split apart, with its log-probabilities.
void CompletionRun::take_tokens(Choice& c, size_t n, ChatDelta& d) {
  for (size_t k = 0; k < n && !c.stopped; ++k) {
    ++c.tokens;
    if (request_.return_token_ids) {
      c.token_ids.push_back(c.ids[k]);
      c.unsent_ids.push_back(c.ids[k]);
    }
    if (!c.text->push(c.ids[k])) {
      c.stopped = true;
      c.stream->cancel();
    }
    const Split s = split(c, d);
    c.reasoning_tokens += s.part == Part::Reasoning;
    if (request_.answer_logprobs_only) {
      // A call made: the tokens held are its (its opener's text was held as a
      // possible tag), and this one too unless it opened the next call.
      const bool made = s.made_call && d.content.size() == s.content_before;
      if (made) c.held_logprobs.clear();
      if (k < c.received_logprobs.size() && s.part != Part::Reasoning && !s.dropped &&
          !(made && !c.parser->in_tool_call()))
        c.held_logprobs.push_back(std::move(c.received_logprobs[k]));
      settle(c, d, s);
      continue;
    }
    // Without include_reasoning, the reasoning's tokens are left out of the logprobs too.
    if (s.part == Part::Reasoning && !request_.include_reasoning) continue;
    if (k < c.received_logprobs.size()) {
      c.unsent_logprobs.push_back(c.received_logprobs[k]);
      c.logprobs.push_back(std::move(c.received_logprobs[k]));
    }
  }
}

// The stream ended and its tokens are all taken: what the text and the split
// held back goes out, and the choice gets its finish and stop reasons.
void CompletionRun::end_choice(Choice& c, engine::RequestStream::State state, ChatDelta& d) {
  const bool finished = state == engine::RequestStream::State::Finished;
  if (state == engine::RequestStream::State::Failed && !failure_) {
    failure_ = failure_of(*c.stream);
    for (auto& other : choices_) other->stream->cancel();
  }
  c.done = true;
  if (finished) c.result = c.stream->result();
  const StopReason r = c.result.reason;
  c.text->finish(/*ended_by_stop_id=*/finished && r == StopReason::Eos);
  const GenerationOptions& o = request_.options;
  const auto in = [](const std::vector<int32_t>& ids, int32_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  // The stop id that ended it writes no text: what the text held back until
  // its end is not its. (A grammar that completes ends a reply without one.)
  if (request_.answer_logprobs_only && finished && r == StopReason::Eos && !c.held_logprobs.empty() &&
      !c.result.ids.empty() && c.held_logprobs.back().id == c.result.ids.back() &&
      (in(o.stop_ids, c.result.ids.back()) || in(o.eos_ids, c.result.ids.back())))
    c.held_logprobs.pop_back();
  if (!c.pieces.empty()) settle(c, d, split(c, d));  // what the text held back until its end
  if (c.parser) {
    const size_t content_before = d.content.size();
    d.append(c.parser->finish());
    settle(c, d, {.content_before = content_before});
  }
  if (state == engine::RequestStream::State::Failed)
    c.finish_reason = "abort";
  else if (c.stopped || c.text->stopped_by_string() || r == StopReason::Eos)  // a stop string found at the flush too
    c.finish_reason = "stop";
  else if (r == StopReason::Callback)
    c.finish_reason = "abort";
  else
    c.finish_reason = "length";
  if (c.finish_reason == "stop" && c.parser && c.parser->saw_tool_call()) c.finish_reason = "tool_calls";
  // As vLLM: a stop string, else a stop id that is no eos (an eos is null).
  if (c.text->stopped_by_string())
    c.stop_reason = c.text->stop_string();
  else if (r == StopReason::Eos && !c.result.ids.empty() && in(o.stop_ids, c.result.ids.back()) &&
           (o.ignore_eos || !in(o.eos_ids, c.result.ids.back())))
    c.stop_reason = c.result.ids.back();
}

ordered_json CompletionRun::chunk(const ordered_json& choices) const {
  return {{"id", id_},
          {"object", request_.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", served_name(model_, request_.options.adapter)},
          {"choices", choices}};
}

ordered_json CompletionRun::usage() const {
  ordered_json u = {{"prompt_tokens", summary_.prompt_tokens},
                    {"completion_tokens", summary_.completion_tokens},
                    {"total_tokens", summary_.prompt_tokens + summary_.completion_tokens},
                    {"prompt_tokens_details", {{"cached_tokens", summary_.cached_tokens}}}};
  if (request_.chat) u["completion_tokens_details"] = {{"reasoning_tokens", summary_.reasoning_tokens}};
  if (request_.options.prediction) {  // OpenAI's: the prediction's ids the answer confirmed, and those it did not
    u["completion_tokens_details"]["accepted_prediction_tokens"] = summary_.accepted_prediction_tokens;
    u["completion_tokens_details"]["rejected_prediction_tokens"] = summary_.rejected_prediction_tokens;
  }
  return u;
}

ordered_json CompletionRun::usage_so_far(const Choice& c) const {
  const auto prompt_tokens = static_cast<int64_t>(request_.prompts[c.prompt_index].size());
  return {
      {"prompt_tokens", prompt_tokens}, {"completion_tokens", c.tokens}, {"total_tokens", prompt_tokens + c.tokens}};
}

void CompletionRun::finalize() {
  if (finalized_) return;
  finalized_ = true;
  for (const auto& c : choices_) {
    summary_.completion_tokens += c->tokens;
    summary_.reasoning_tokens += c->reasoning_tokens;
    // Of the ids the answer kept (a stop string ends it here, after the engine drew more).
    const std::vector<bool>& predicted = c->result.from_prediction;
    summary_.accepted_prediction_tokens +=
        std::count(predicted.begin(), predicted.begin() + std::min<int64_t>(c->tokens, std::ssize(predicted)), true);
    summary_.rejected_prediction_tokens += c->result.rejected_prediction_tokens;
    if (c->index % request_.n == 0) {  // a prompt's first choice counts it once
      summary_.prompt_tokens += static_cast<int64_t>(request_.prompts[c->prompt_index].size());
      summary_.cached_tokens += c->result.reused_tokens;
    }
  }
  summary_.finish_reason = choices_.empty() ? "" : choices_[0]->finish_reason;
  if (failure_) summary_.finish_reason = "error";
  if (summary_.finish_reason.empty()) summary_.finish_reason = "abort";  // it ended unfinished: its client left
  summary_.total_s = seconds_between(start_, Clock::now());
  metrics_.record_request(summary_.prompt_tokens, summary_.completion_tokens, summary_.ttft_s, summary_.total_s,
                          summary_.finish_reason);
}

namespace {

// `announced`: the choice's calls so far, which numbers the new ones. A
// continuation (more arguments of the last call announced) has only its
// index and its arguments, as OpenAI streams them.
ordered_json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& id, size_t choice, int& announced,
                             bool with_index, bool with_offset) {
  ordered_json out = ordered_json::array();
  for (const ToolCall& c : calls) {
    ordered_json call;
    if (c.continuation) {
      call["index"] = announced - 1;
      call["function"] = {{"arguments", c.arguments}};
      out.push_back(std::move(call));
      continue;
    }
    if (with_index) call["index"] = announced;
    call["id"] = "call_" + id + "_" + std::to_string(choice) + "_" + std::to_string(announced++);
    call["type"] = "function";
    call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    if (with_offset) call["content_before"] = c.content_before;
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

ordered_json CompletionRun::logprobs_json(const std::vector<TokenLogprobs>& lps, int64_t& text_offset,
                                          const std::vector<int64_t>& content_at) const {
  const Tokenizer& tok = model_.bundle.require_tokenizer();
  auto piece = [&](int32_t id) { return std::string(tok.token_bytes(id)); };
  // The token as the answer names it: its bytes as text (ill-formed UTF-8 as U+FFFD), or "token_id:<id>".
  auto name = [&](int32_t id) {
    if (request_.tokens_as_ids) return "token_id:" + std::to_string(id);
    std::string text;
    utf8::append_lossy(text, tok.token_bytes(id));
    return text;
  };
  if (request_.chat) {  // {"content": [{token, logprob, bytes, top_logprobs: [...]}]}
    auto entry = [&](int32_t id, float lp) {
      const std::string token = name(id);
      const std::string bytes = request_.tokens_as_ids ? token : piece(id);  // of what the token names
      return ordered_json{
          {"token", token}, {"logprob", lp}, {"bytes", std::vector<uint8_t>(bytes.begin(), bytes.end())}};
    };
    ordered_json content = ordered_json::array();
    for (size_t i = 0; i < lps.size(); ++i) {
      const TokenLogprobs& l = lps[i];
      ordered_json e = entry(l.id, l.logprob);
      e["top_logprobs"] = ordered_json::array();
      for (const auto& [id, lp] : l.top) e["top_logprobs"].push_back(entry(id, lp));
      if (i < content_at.size()) e["content_at"] = content_at[i];  // the Responses API's, never a client's
      content.push_back(std::move(e));
    }
    return {{"content", std::move(content)}};
  }
  // Completions: parallel lists, as the legacy API has them.
  ordered_json tokens = ordered_json::array(), token_logprobs = ordered_json::array(), top = ordered_json::array(),
               offsets = ordered_json::array();
  for (const TokenLogprobs& l : lps) {
    tokens.push_back(name(l.id));
    if (std::isnan(l.logprob)) {  // an echoed prompt's first token
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
    } else {
      token_logprobs.push_back(l.logprob);
      // The sampled token is always among them (so up to logprobs + 1), as OpenAI's API says. Tokens of partial
      // UTF-8 share a name (U+FFFD): the sampled one keeps it, else the likelier, so that no key repeats and
      // top_logprobs[i][tokens[i]] is the sampled token's.
      const std::string sampled = name(l.id);
      ordered_json alternatives = ordered_json::object();
      for (const auto& [id, lp] : l.top)
        if (std::string key = name(id); (key != sampled || id == l.id) && !alternatives.contains(key))
          alternatives[std::move(key)] = lp;
      if (!alternatives.contains(sampled)) alternatives[sampled] = l.logprob;
      top.push_back(std::move(alternatives));
    }
    offsets.push_back(text_offset);
    // In characters, as Python counts the text.
    if (!request_.text.skip_special_tokens || !tok.is_special(l.id))
      text_offset += static_cast<int64_t>(utf8::code_points(tok.token_bytes(l.id)));
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

ordered_json CompletionRun::prompt_logprobs_json(const Choice& c) const {
  const Tokenizer& tok = model_.bundle.require_tokenizer();
  auto entry = [&](int32_t id, float logprob, int64_t rank) {
    return ordered_json{{"logprob", logprob}, {"rank", rank}, {"decoded_token", tok.decode(std::span(&id, 1))}};
  };
  ordered_json out = ordered_json::array({nullptr});
  for (const TokenLogprobs& l : c.stream->prompt_logprobs()) {
    ordered_json tokens = {{std::to_string(l.id), entry(l.id, l.logprob, l.rank)}};
    const size_t top = std::min(l.top.size(), static_cast<size_t>(request_.prompt_logprobs));
    for (size_t k = 0; k < top; ++k)
      if (l.top[k].first != l.id)
        tokens[std::to_string(l.top[k].first)] = entry(l.top[k].first, l.top[k].second, static_cast<int64_t>(k) + 1);
    out.push_back(std::move(tokens));
  }
  return out;
}

bool CompletionRun::run_until(Clock::time_point deadline) {
  for (;;) {
    bool running = false;
    for (auto& c : choices_) {
      if (c->done) continue;
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      poll(*c, std::min<std::chrono::milliseconds>(100ms, std::chrono::ceil<std::chrono::milliseconds>(left)),
           kAllTokens);
      running |= !c->done;
    }
    if (!running) return true;
  }
}

ordered_json CompletionRun::run_to_end(std::chrono::milliseconds interval,
                                       const std::function<bool()>& client_waiting) {
  auto last_check = Clock::now();
  for (bool running = true; running;) {
    running = false;
    for (auto& c : choices_)
      if (!c->done) {
        poll(*c, 100ms, kAllTokens);
        running |= !c->done;
      }
    if (running && Clock::now() - last_check > interval) {
      last_check = Clock::now();
      if (!client_waiting())
        for (auto& c : choices_) c->stream->cancel();
    }
  }
  finalize();
  if (failure_) return failure_->to_json();
  ordered_json choices = ordered_json::array();
  for (const auto& c : choices_) {
    ordered_json choice = {{"index", c->index}};
    if (request_.chat) {
      ordered_json message = {{"role", "assistant"}};
      const bool calls = !c->total.tool_calls.empty();
      // No answer beside reasoning or calls is null, as vLLM and the streamed reply (which sends none) have it.
      const bool other_parts = calls || !c->total.reasoning.empty();
      message["content"] = other_parts && c->total.content.empty() ? ordered_json() : ordered_json(c->total.content);
      if (!c->total.reasoning.empty() && request_.include_reasoning) message["reasoning_content"] = c->total.reasoning;
      int announced = 0;
      if (calls)
        message["tool_calls"] =
            tool_calls_json(c->total.tool_calls, id_, c->index, announced, false, request_.tool_call_offsets);
      choice["message"] = std::move(message);
    } else {
      choice["text"] = c->total.content;
    }
    int64_t offset = 0;
    choice["logprobs"] =
        request_.options.logprobs >= 0 ? logprobs_json(c->logprobs, offset, c->content_at) : ordered_json();
    choice["finish_reason"] = c->finish_reason;
    choice["stop_reason"] = c->stop_reason;
    if (request_.prompt_logprobs >= 0 && !request_.chat) choice["prompt_logprobs"] = prompt_logprobs_json(*c);
    if (request_.return_token_ids) {  // vLLM's: completions give each choice its prompt's, chat gives it beside
      if (!request_.chat) choice["prompt_token_ids"] = request_.prompts[c->prompt_index];
      choice["token_ids"] = c->token_ids;
    }
    choices.push_back(std::move(choice));
  }
  ordered_json out = chunk(choices);
  if (request_.return_token_ids && request_.chat) out["prompt_token_ids"] = request_.prompts.front();
  out["object"] = request_.chat ? "chat.completion" : "text_completion";
  // Chat has one prompt: vLLM gives its list beside the choices.
  if (request_.prompt_logprobs >= 0 && request_.chat) out["prompt_logprobs"] = prompt_logprobs_json(*choices_.front());
  out["usage"] = usage();
  return out;
}

void CompletionRun::stream(const std::function<bool(const std::string&)>& write, const EventFrame& frame) {
  auto last_write = Clock::now();
  auto framed = [&](const ordered_json& event) { return frame ? frame(event) : sse(event); };
  auto send = [&](const std::string& text) {
    if (text.empty()) return true;
    last_write = Clock::now();
    if (write(text)) return true;
    for (auto& c : choices_) c->stream->cancel();
    return false;
  };
  bool chat_prompt_ids_sent = false;
  // The last one of a choice carries its finish_reason, and vLLM's stop_reason.
  auto delta_chunk = [&](Choice& c, ordered_json delta, const ordered_json& finish) {
    ordered_json choice = {{"index", c.index}};
    if (request_.chat)
      choice["delta"] = std::move(delta);
    else
      choice["text"] = delta.value("content", "");
    choice["logprobs"] = ordered_json();
    if (!c.unsent_logprobs.empty()) {  // the tokens behind this chunk's text
      choice["logprobs"] = logprobs_json(c.unsent_logprobs, c.text_offset, c.unsent_content_at);
      c.unsent_logprobs.clear();
      c.unsent_content_at.clear();
    }
    choice["finish_reason"] = finish;
    if (!finish.is_null()) choice["stop_reason"] = c.stop_reason;
    // vLLM's return_token_ids: the chunk's ids, and the prompt's in the first chunk (completions: the choice's).
    bool& prompt_ids_sent = request_.chat ? chat_prompt_ids_sent : c.prompt_ids_sent;
    const bool prompt_ids = request_.return_token_ids && !std::exchange(prompt_ids_sent, true);
    if (prompt_ids && !request_.chat) choice["prompt_token_ids"] = request_.prompts[c.prompt_index];
    if (request_.return_token_ids) choice["token_ids"] = std::exchange(c.unsent_ids, {});
    ordered_json event = chunk(ordered_json::array({std::move(choice)}));
    if (prompt_ids && request_.chat) event["prompt_token_ids"] = request_.prompts.front();
    // OpenAI: null on all but the last chunk; vLLM's continuous_usage_stats: the choice's so far.
    if (request_.include_usage) event["usage"] = request_.continuous_usage ? usage_so_far(c) : ordered_json();
    return framed(event);
  };
  if (request_.chat)
    for (const auto& c : choices_)
      if (!send(delta_chunk(*c, {{"role", "assistant"}, {"content", ""}}, nullptr))) return finalize();
  for (bool running = true; running;) {
    running = false;
    const auto timeout = choices_.size() == 1 ? 100ms : 10ms;
    for (auto& c : choices_) {
      if (c->done) continue;
      ChatDelta d = poll(*c, timeout, 1);  // a chunk per token, as OpenAI streams
      ordered_json delta = ordered_json::object();
      if (!d.reasoning.empty() && request_.include_reasoning) delta["reasoning_content"] = d.reasoning;
      if (!d.content.empty()) delta["content"] = d.content;
      if (!d.tool_calls.empty())
        delta["tool_calls"] =
            tool_calls_json(d.tool_calls, id_, c->index, c->tool_calls, true, request_.tool_call_offsets);
      if (!delta.empty() && !send(delta_chunk(*c, delta, nullptr))) return finalize();
      if (failure_) {  // vLLM's and OpenAI's way: an error event, which the clients raise
        finalize();
        if (send(framed(failure_->to_json())) && !frame) send("data: [DONE]\n\n");
        return;
      }
      if (c->done && !send(delta_chunk(*c, ordered_json::object(), c->finish_reason))) return finalize();
      running |= !c->done;
    }
    // A comment now and then lets a client that left be noticed while its request waits.
    if (running && Clock::now() - last_write > 1s && !send(": keep-alive\n\n")) return finalize();
  }
  finalize();
  if (request_.include_usage) {
    ordered_json last = chunk(ordered_json::array());
    last["usage"] = usage();
    if (!send(framed(last))) return;
  }
  if (!frame) send("data: [DONE]\n\n");
}

}  // namespace qinfer::server
