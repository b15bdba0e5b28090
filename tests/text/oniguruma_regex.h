// Oniguruma (the regex engine of HF tokenizers) for the differential tests.
// Its own translation unit: oniguruma.h and the <regex.h> that gtest
// includes both define struct re_registers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace qinfer::test {

class OnigurumaRegex {
 public:
  explicit OnigurumaRegex(std::string_view pattern);
  ~OnigurumaRegex();
  OnigurumaRegex(const OnigurumaRegex&) = delete;
  OnigurumaRegex& operator=(const OnigurumaRegex&) = delete;

  // [begin, end) of the first match at or after `from`.
  std::optional<std::pair<size_t, size_t>> search(std::string_view text, size_t from) const;
  // What HF's Split(Isolated) makes of `text` (matches and the gaps between them), as piece ends.
  std::vector<size_t> piece_ends(std::string_view text) const;

 private:
  struct Impl;
  Impl* impl_;
};

// unicode::kLetter | kNumber | kSpace as this Oniguruma sees `cp`.
uint8_t oniguruma_classes(char32_t cp);

}  // namespace qinfer::test
