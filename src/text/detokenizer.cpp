#include "text/detokenizer.h"

#include "util/utf8.h"

namespace qinfer {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok, bool skip_special_tokens)
    : tok_(&tok), skip_special_(skip_special_tokens) {}

std::string StreamingDetokenizer::push(int32_t id) {
  if (skip_special_ && tok_->is_special(id)) return {};
  pending_.append(tok_->token_bytes(id));
  // Decode up to a character that the bytes so far leave unfinished.
  size_t settled = 0;
  while (settled < pending_.size()) {
    const utf8::Step st = utf8::step(pending_, settled);
    if (st.kind == utf8::Step::kTruncated) break;
    settled += st.len;
  }
  std::string text;
  utf8::append_lossy(text, std::string_view(pending_).substr(0, settled));
  pending_.erase(0, settled);
  return text;
}

std::string StreamingDetokenizer::flush() {
  std::string text;
  utf8::append_lossy(text, pending_);
  pending_.clear();
  return text;
}

}  // namespace qinfer
