// Reading a Hugging Face tokenizer.json into plain data, refusing every
// component qinfer does not implement exactly (with a message naming it):
// what is accepted is byte-level BPE as Qwen2/Qwen3 use it: an optional NFC
// normalizer, the pre-tokenizer Sequence [Split(Qwen2 regex, Isolated),
// ByteLevel(add_prefix_space=false, use_regex=false)], the ByteLevel decoder,
// added tokens without lstrip/rstrip/single_word/normalized, and a
// post-processor that is ByteLevel, TemplateProcessing or a Sequence of them.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/added_tokens.h"

namespace qinfer {

// Token strings are views into the JSON text (valid while it lives), or
// into `unescaped` for the few written with escapes.
struct TokenizerJson {
  std::vector<std::pair<std::string_view, int32_t>> vocab;            // byte-level token string, id
  std::vector<std::pair<std::string_view, std::string_view>> merges;  // in rank order
  std::deque<std::string> unescaped;                                  // stable addresses
  std::vector<AddedToken> added_tokens;
  bool nfc = false;
  // What the post-processor puts around a text's ids when HF encodes with
  // add_special_tokens (TemplateProcessing's single template).
  std::vector<int32_t> special_prefix, special_suffix;
};

// `origin` names the text in error messages (the file path).
TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& origin);

}  // namespace qinfer
