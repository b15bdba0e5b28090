#include "runtime/text_generation.h"

#include "runtime/text_stream.h"

namespace qinfer {

TextGenerationResult generate_text(Session& session, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                   const GenerationOptions& opts, const std::vector<std::string>& stop_strings,
                                   const OnText& on_text) {
  TextGenerationResult r;
  TextStream stream(tokenizer, stop_strings, on_text);
  r.gen = session.generate(prompt, opts, [&](int32_t id) { return stream.push(id); });
  stream.finish();
  r.text = stream.text();
  r.stopped_by_string = stream.stopped_by_string();
  r.cancelled = stream.cancelled();
  return r;
}

}  // namespace qinfer
