// Added tokens (<|im_start|>, <think>, ...) are cut out of the raw text before
// anything else, as Hugging Face's AddedVocabulary does: the leftmost
// occurrence wins, the longest token among those starting there, matched
// case-sensitively anywhere, inside words too. Tokens marked normalized are
// cut out the same way, from the normalized text of each stretch between the
// others, their own content normalized.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special;  // skipped by decode(skip_special_tokens); not matched when special text is not allowed
  // Matched in the normalized text (after the NFC) rather than the raw one:
  // what transformers' add_tokens() writes for a plain token.
  bool normalized = false;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);  // contents must not be empty

  struct Match {
    size_t begin, end;
    int32_t id;
  };
  std::optional<Match> find(std::string_view text, size_t from) const;

 private:
  struct Candidate {
    std::string content;
    int32_t id;
  };
  bool any_ = false;  // a token at all: without one, find() returns at once (no scan of the text)
  std::array<bool, 256> is_first_byte_{};
  std::array<std::vector<Candidate>, 256> by_first_byte_;  // longest first
};

}  // namespace qinfer
