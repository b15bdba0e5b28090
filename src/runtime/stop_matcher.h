// Finds stop strings in streamed text. Generation decodes one token at a
// time, so a stop string may arrive split over many pieces: the matcher
// holds back the end of the text while it could still be the beginning of a
// stop string, and never emits the stop string itself.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {

class StopMatcher {
 public:
  // Throws qinfer::Error on an empty stop string. No stops = pass-through.
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text safe to show now
    bool stopped = false;  // a stop string completed; emit is the text before it
    std::string stop;      // which one
  };

  // Feeds newly decoded text. Generation stops at the first position where
  // any stop string ends (if several end there, at the first of them in
  // the list, as vLLM breaks the tie), whatever
  // the split of the text into pieces. After a stop, returns nothing more.
  // With `may_stop` false no stop string may end in this text (vLLM's
  // min_tokens: one ending in the first tokens' text does not count, and
  // the text passes on).
  Result push(std::string_view text, bool may_stop = true);

  // End of generation without a stop: releases the held-back text.
  std::string flush();

  bool stopped() const { return stopped_; }

 private:
  // Length of the longest end of pending_ that begins some stop string.
  size_t held_back_length() const;

  std::vector<std::string> stops_;
  std::string pending_;  // held back: could still become a stop string
  size_t passed_ = 0;    // of pending_, the text in which no stop string may end (pushed with may_stop false)
  bool stopped_ = false;
};

}  // namespace qinfer
