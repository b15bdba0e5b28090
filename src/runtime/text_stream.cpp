#include "runtime/text_stream.h"

#include <algorithm>
#include <utility>

namespace qinfer {

TextStream::TextStream(const Tokenizer& tokenizer, const std::vector<std::string>& stop_strings, OnText on_text,
                       StopOptions options)
    : detok_(tokenizer, options.skip_special_tokens),
      stops_(stop_strings),
      options_(options),
      on_text_(std::move(on_text)) {}

bool TextStream::emit(const std::string& piece) {
  if (piece.empty()) return true;
  text_ += piece;
  if (on_text_ && !on_text_(piece)) cancelled_ = true;
  return !cancelled_;
}

bool TextStream::push(int32_t id) {
  if (held_ && !show(*std::exchange(held_, std::nullopt))) return false;
  if (std::find(options_.stop_ids.begin(), options_.stop_ids.end(), id) != options_.stop_ids.end()) {
    held_ = id;
    return true;
  }
  return show(id);
}

bool TextStream::show(int32_t id) {
  const StopMatcher::Result m = stops_.push(detok_.push(id), ++pushed_ > options_.min_tokens);
  const bool keep_going = emit(m.emit + (m.stopped && options_.include_stop_string ? m.stop : ""));
  if (m.stopped) {
    stopped_by_string_ = true;
    stop_string_ = m.stop;
  }
  return keep_going && !m.stopped;
}

void TextStream::finish(bool ended_by_stop_id) {
  if (held_ && (!ended_by_stop_id || options_.include_stop_string)) show(*held_);
  held_.reset();
  if (stopped_by_string_ || cancelled_) return;
  const StopMatcher::Result m = stops_.push(detok_.flush(), pushed_ > options_.min_tokens);
  emit(m.emit + (m.stopped && options_.include_stop_string ? m.stop : ""));
  if (m.stopped) {
    stopped_by_string_ = true;
    stop_string_ = m.stop;
  } else {
    emit(stops_.flush());
  }
}

}  // namespace qinfer
