// Incremental decoding for generation: each pushed id yields the text that is
// complete so far, never splitting a UTF-8 character, and the concatenation
// of every push() and the final flush() equals Tokenizer::decode of all ids.
// That holds because HF's lossy decoding settles every byte once the next
// byte is known, except a character still cut off by the end of the input:
// only that tail is held back.
#pragma once
#include <cstdint>
#include <string>

#include "text/tokenizer.h"

namespace qinfer {

class StreamingDetokenizer {
 public:
  // `tok` must outlive the detokenizer.
  explicit StreamingDetokenizer(const Tokenizer& tok, bool skip_special_tokens = false);

  std::string push(int32_t id);  // newly completed text (may be empty)
  std::string flush();           // whatever remains (a cut-off character -> U+FFFD, as decode does)

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;  // bytes of an unfinished character
};

}  // namespace qinfer
