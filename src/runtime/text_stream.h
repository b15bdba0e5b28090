// One request's generated ids seen as text: the streaming detokenizer and the
// stop-string matcher, so a frontend only ever receives text a user should
// see (special tokens skipped, a stop string and anything after it held back).
// Shared by every frontend: generate, chat, batch and serve.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/stop_matcher.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace qinfer {

// Called with each piece of newly completed text; return false to cancel (Ctrl-C, client gone).
using OnText = std::function<bool(std::string_view piece)>;

// vLLM's: stop strings count from the text of the token after the
// min_tokens-th on (as eos and stop ids, the answer keeps min_tokens), and
// with include_stop_string the one that ended the text is kept at its end;
// so is the text of a stop id that ended it (eos or stop_token_ids: its
// text is left out otherwise). skip_special_tokens false shows special
// tokens' text (<|im_start|>, ...).
struct StopOptions {
  int64_t min_tokens = 0;
  bool include_stop_string = false;
  bool skip_special_tokens = true;
  // The ids that may end generation: the text of one is held until the next
  // id shows it did not (finish says whether it did).
  std::vector<int32_t> stop_ids;
};

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, const std::vector<std::string>& stop_strings, OnText on_text = {},
             StopOptions options = {});

  // The next generated id; false when generation should stop (a stop string
  // appeared, or on_text cancelled).
  bool push(int32_t id);
  // After the last id: emits what the detokenizer and matcher still hold.
  // ended_by_stop_id: the last id was a stop id that ended generation.
  void finish(bool ended_by_stop_id = false);

  const std::string& text() const { return text_; }  // everything emitted
  bool stopped_by_string() const { return stopped_by_string_; }
  const std::string& stop_string() const { return stop_string_; }  // the one that stopped it
  bool cancelled() const { return cancelled_; }

 private:
  bool emit(const std::string& piece);
  bool show(int32_t id);  // the id's text through the detokenizer and the stop matcher

  StreamingDetokenizer detok_;
  StopMatcher stops_;
  StopOptions options_;
  int64_t pushed_ = 0;           // ids
  std::optional<int32_t> held_;  // a stop id whose text waits for the next id
  OnText on_text_;
  std::string text_, stop_string_;
  bool stopped_by_string_ = false, cancelled_ = false;
};

}  // namespace qinfer
