// What the grammar tests share: whether a grammar matches a text, and random
// texts it matches.
#pragma once
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "text/grammar/matcher.h"

namespace qinfer::grammar {

// Whether the whole of `text` is a match (not just a prefix of one).
inline bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.advance(text) && m.state().accepting;
}

// A text of `g` picked a byte at a time among those it allows (stopping
// where it may, one time in `stop_one_in`); empty when the walk reached
// `max_bytes` first or a dead end (which a grammar must not have).
inline std::string random_match(const std::shared_ptr<const Grammar>& g, std::mt19937& rng, size_t max_bytes = 400,
                                unsigned stop_one_in = 8) {
  Matcher m(g);
  std::string text;
  while (text.size() < max_bytes) {
    if (m.state().accepting && rng() % stop_one_in == 0) return text;
    std::string next;
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      if (m.allows(std::string_view(&c, 1))) next += c;
    }
    if (next.empty()) return m.state().accepting ? text : std::string();
    const char c = next[rng() % next.size()];
    m.advance(std::string_view(&c, 1));
    text += c;
  }
  return std::string();
}

}  // namespace qinfer::grammar
