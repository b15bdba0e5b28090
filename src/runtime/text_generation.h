// Generation seen as text: token ids stream through the detokenizer and the
// stop-string matcher, and the frontend receives only text a user should see.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/session.h"
#include "runtime/text_stream.h"
#include "text/tokenizer.h"

namespace qinfer {

struct TextGenerationResult {
  GenerationResult gen;
  std::string text;  // everything emitted (special tokens skipped, stop string excluded)
  bool stopped_by_string = false;
  bool cancelled = false;  // on_text returned false
  const char* finish_reason() const { return qinfer::finish_reason(gen.reason, stopped_by_string); }
};

TextGenerationResult generate_text(Session& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                   const GenerationOptions& opts, const std::vector<std::string>& stop_strings,
                                   const OnText& on_text);

}  // namespace qinfer
