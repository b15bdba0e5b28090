#include "runtime/stop_matcher.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace qinfer {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i)
    if (stops_[i].empty()) fail("stop string ", i + 1, " is empty");
}

StopMatcher::Result StopMatcher::push(std::string_view text, bool may_stop) {
  if (stopped_) return {"", true, ""};
  pending_ += text;
  if (!may_stop) passed_ = pending_.size();

  // pending_ starts at the earliest place a stop string could still begin,
  // so every match lies inside it; the first that ends after passed_, the
  // first in the list among those ending there (vLLM's tie-break).
  size_t stop_start = std::string::npos, stop_end = std::string::npos;
  const std::string* matched = nullptr;
  for (const std::string& stop : stops_) {
    const size_t from = passed_ >= stop.size() ? passed_ - stop.size() + 1 : 0;
    size_t start = pending_.find(stop, from);
    if (start == std::string::npos) continue;
    size_t end = start + stop.size();
    if (end < stop_end) {
      stop_start = start;
      stop_end = end;
      matched = &stop;
    }
  }
  if (matched) {
    stopped_ = true;
    Result result{pending_.substr(0, stop_start), true, *matched};
    pending_.clear();
    return result;
  }

  size_t safe = pending_.size() - held_back_length();
  Result result{pending_.substr(0, safe), false, ""};
  pending_.erase(0, safe);
  passed_ -= std::min(passed_, safe);
  return result;
}

std::string StopMatcher::flush() {
  std::string rest = std::move(pending_);
  pending_.clear();
  return stopped_ ? std::string() : rest;
}

size_t StopMatcher::held_back_length() const {
  std::string_view pending = pending_;
  size_t longest = 0;
  for (std::string_view stop : stops_) {
    // A complete stop string was handled by push(): only proper prefixes.
    for (size_t len = std::min(stop.size() - 1, pending.size()); len > longest; --len) {
      if (pending.ends_with(stop.substr(0, len))) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace qinfer
