#include "runtime/text_generation.h"

#include "runtime/stop_matcher.h"
#include "text/detokenizer.h"

namespace qinfer {

const char* TextGenerationResult::finish_reason() const {
  if (cancelled) return "cancelled";
  if (stopped_by_string) return "stop";
  switch (gen.reason) {
    case StopReason::Eos: return "stop";
    case StopReason::MaxTokens: return "length";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Callback: return "cancelled";
  }
  return "?";
}

TextGenerationResult generate_text(Session& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                   const GenerationOptions& opts, const std::vector<std::string>& stop_strings,
                                   const OnText& on_text) {
  TextGenerationResult r;
  StreamingDetokenizer detok(tokenizer, /*skip_special_tokens=*/true);
  StopMatcher stops(stop_strings);
  auto emit = [&](const std::string& text) {
    if (text.empty()) return true;
    r.text += text;
    if (on_text && !on_text(text)) r.cancelled = true;
    return !r.cancelled;
  };
  r.gen = session.generate(prompt, opts, [&](int32_t id) {
    const StopMatcher::Result m = stops.push(detok.push(id));
    const bool keep_going = emit(m.emit);
    if (m.stopped) r.stopped_by_string = true;
    return keep_going && !m.stopped;
  });
  if (!r.stopped_by_string && !r.cancelled) {
    const StopMatcher::Result m = stops.push(detok.flush());
    emit(m.emit);
    if (m.stopped) r.stopped_by_string = true;
    else emit(stops.flush());
  }
  return r;
}

}  // namespace qinfer
