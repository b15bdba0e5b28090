// libFuzzer target: the input is an HTTP request body, mapped as the server
// maps it (JSON -> chat or completion request -> the Qwen3 chat template ->
// token ids) with the tiny checkpoint's tokenizer and template; the first
// byte picks the endpoint (odd: chat; 2 mod 4: responses; 4 mod 8:
// embeddings, answered with made-up states; 8 mod 16: rerank, answered with
// made-up logits; 16 mod 32: classify, on a three-label classifier made from
// the tiny checkpoint, answered from made-up states; 32 mod 64: score,
// answered with made-up logits; 64: a GBNF grammar's text, 192: a regex's,
// compiled and masked over the vocabulary; else completions). An ApiError (the 4xx the client gets) or a
// qinfer::Error (a 400) is the expected outcome of most inputs; a crash, a
// sanitizer report or any other exception is a finding. The rendered reply
// splitter gets the same bytes in pieces and must agree with itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sequence_classifier.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/classify_api.h"
#include "server/embeddings_api.h"
#include "server/openai_request.h"
#include "server/rerank_api.h"
#include "server/responses_api.h"
#include "server/score_api.h"
#include "text/grammar/gbnf.h"
#include "text/grammar/matcher.h"
#include "text/grammar/regex.h"

namespace {

const qinfer::server::ServedModel& served() {
  static const qinfer::ModelBundle bundle = qinfer::load_model_bundle(std::string(QINFER_TEST_DATA) + "/models/tiny");
  static const qinfer::server::ServedModel model{bundle, "tiny", 2048};
  return model;
}

// Written once per process into a scratch directory removed at exit (after
// the bundle that maps it).
const qinfer::server::ServedModel& classifier() {
  static const qinfer::test::ScratchDir dir("fuzz-classifier");
  static const std::string path = [] {
    qinfer::test::write_sequence_classifier(dir.file("m"), true, {"negative", "neutral", "positive"});
    return dir.file("m");
  }();
  static const qinfer::ModelBundle bundle = qinfer::load_model_bundle(path);
  static const qinfer::server::ServedModel model{bundle, "tiny-cls", 2048};
  return model;
}

// States for each input of a pooling request, made up.
std::vector<std::vector<float>> made_up_states(size_t inputs) {
  const auto hidden = static_cast<size_t>(served().bundle.model->config().hidden_size);
  std::vector<std::vector<float>> states;
  for (size_t i = 0; i < inputs; ++i) states.emplace_back(hidden, static_cast<float>(i) - 0.5f);
  return states;
}

// Tools as a Qwen3-Coder request offers them, for the XML calls' typed values.
std::shared_ptr<const nlohmann::ordered_json> coder_tools() {
  static const auto tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"s": {"type": "string"},
      "i": {"type": "integer"}, "n": {"type": ["number", "null"]}, "o": {"type": "object"}}}}}])"));
  return tools;
}

void check_reply_splitter(const std::string& text, bool coder) {
  using qinfer::server::ChatOutputParser;
  // Joined as a client joins them (a call's arguments may come in pieces),
  // cut at any piece size, the result is the same.
  auto canonical = [&](size_t piece) {
    ChatOutputParser p(false, qinfer::server::ToolCalls::Any, coder ? coder_tools() : nullptr);
    qinfer::server::ChatDelta all;
    for (size_t at = 0; at < text.size(); at += piece) all.append(p.push(text.substr(at, piece)));
    all.append(p.finish());
    std::string tools;
    for (const auto& call : all.tool_calls)
      tools += call.name + '\0' + call.arguments + '\0' + std::to_string(call.content_before) + '\0';
    return all.reasoning + '\1' + all.content + '\1' + tools;
  };
  if (canonical(1) != canonical(text.size() + 1) || canonical(3) != canonical(text.size() + 1)) __builtin_trap();
}

}  // namespace

// The grammar text of a structured_outputs grammar (GBNF) or regex, as the
// server compiles it, then the first token mask over the tiny checkpoint's
// vocabulary, and the mask after the text's own first bytes.
void check_grammar(const std::string& text, bool regex) {
  const auto g = std::make_shared<const qinfer::grammar::Grammar>(regex ? qinfer::grammar::regex_grammar(text)
                                                                        : qinfer::grammar::gbnf_grammar(text));
  qinfer::grammar::Matcher m(g);
  std::vector<uint64_t> mask;
  served().bundle.token_trie()->allowed(m, mask);
  if (m.advance(std::string_view(text).substr(0, 8))) served().bundle.token_trie()->allowed(m, mask);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 128 == 64) {  // 64: a GBNF grammar, 192: a regex
    try {
      check_grammar(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), data[0] & 128);
    } catch (const qinfer::Error&) {
      // a grammar it cannot read or follow: the 400 the client gets
    }
    return 0;
  }
  const int endpoint = data[0] % 64 == 32   ? 6
                       : data[0] % 32 == 16 ? 5
                       : data[0] % 16 == 8  ? 4
                       : data[0] % 8 == 4   ? 3
                       : data[0] % 4 == 2   ? 2
                       : data[0] & 1        ? 0
                                            : 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const auto json = qinfer::server::parse_json_body(body);
    if (endpoint == 0)
      (void)qinfer::server::parse_chat_request(json, served());
    else if (endpoint == 1)
      (void)qinfer::server::parse_completion_request(json, served());
    else if (endpoint == 3) {
      const auto request = qinfer::server::parse_embedding_request(json, served(), 64);
      (void)qinfer::server::embedding_response(request, made_up_states(request.inputs.size()), "tiny").dump();
    } else if (endpoint == 4) {
      const auto request = qinfer::server::parse_rerank_request(json, served(), 64);
      std::vector<std::vector<float>> logits;
      for (size_t i = 0; i < request.inputs.size(); ++i)
        logits.push_back({static_cast<float>(i % 3), static_cast<float>(i % 5) - 2.0f});
      (void)qinfer::server::rerank_response(request, logits, "rerank-0", "tiny").dump();
    } else if (endpoint == 6) {
      const auto request = qinfer::server::parse_score_request(json, served(), 64);
      std::vector<std::vector<float>> logits;
      for (size_t i = 0; i < request.inputs.size(); ++i) logits.push_back({static_cast<float>(i % 3), -1.0f});
      (void)qinfer::server::score_response(request, logits, "score-0", "tiny").dump();
    } else if (endpoint == 5) {
      const auto request = qinfer::server::parse_classify_request(json, classifier(), 64);
      (void)qinfer::server::classify_response(request, made_up_states(request.inputs.size()),
                                              *classifier().bundle.model, "classify-0", "tiny-cls")
          .dump();
    } else {  // as the server picks: truncation "auto" drops input items to fit
      const auto chat = qinfer::server::chat_body_of_response_request(json);
      (void)(qinfer::server::drops_input_to_fit(json) ? qinfer::server::parse_chat_request_fitting(chat, served())
                                                      : qinfer::server::parse_chat_request(chat, served()));
    }
  } catch (const qinfer::Error&) {
    // ApiError or another clear error: what the client is told
  }
  check_reply_splitter(body, false);
  check_reply_splitter(body, true);
  return 0;
}
