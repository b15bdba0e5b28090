// One request's generated ids seen as text: the streaming detokenizer and the
// stop-string matcher, so a frontend only ever receives text a user should
// see (special tokens skipped, a stop string and anything after it held back).
// Shared by every frontend: generate, chat, batch and serve.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/stop_matcher.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace qinfer {

// Called with each piece of newly completed text; return false to cancel (Ctrl-C, client gone).
using OnText = std::function<bool(std::string_view piece)>;

// vLLM's: stop strings count from the min_tokens-th token's text on, and
// with include_stop_string the one that ended the text is kept at its end.
struct StopOptions {
  int64_t min_tokens = 0;
  bool include_stop_string = false;
};

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, const std::vector<std::string>& stop_strings, OnText on_text = {},
             StopOptions options = {});

  // The next generated id; false when generation should stop (a stop string
  // appeared, or on_text cancelled).
  bool push(int32_t id);
  // After the last id: emits what the detokenizer and matcher still hold.
  void finish();

  const std::string& text() const { return text_; }  // everything emitted
  bool stopped_by_string() const { return stopped_by_string_; }
  const std::string& stop_string() const { return stop_string_; }  // the one that stopped it
  bool cancelled() const { return cancelled_; }

 private:
  bool emit(const std::string& piece);

  StreamingDetokenizer detok_;
  StopMatcher stops_;
  StopOptions options_;
  int64_t pushed_ = 0;  // ids
  OnText on_text_;
  std::string text_, stop_string_;
  bool stopped_by_string_ = false, cancelled_ = false;
};

}  // namespace qinfer
