// Byte-level BPE tokenizer read from a Hugging Face tokenizer.json, producing
// exactly the ids of Hugging Face `tokenizers` (see tokenizer_json.h for the
// components it accepts). Encoding: added tokens are cut out of the raw text
// first; each stretch between them is NFC-normalized (HF's Unicode 9 tables),
// split by the Qwen2 pre-tokenizer and BPE-encoded word by word (with a cache
// of frequent words). Decoding: token bytes concatenated, ill-formed UTF-8
// replaced by U+FFFD as HF does.
//
// Thread safety: all const methods may run concurrently. The word cache
// serves one encode call at a time; a call that finds it busy runs without it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/string_table.h"

namespace qinfer {

struct TokenizerJson;

class Tokenizer {
 public:
  static Tokenizer from_file(const std::string& tokenizer_json_path);  // throws Error naming unsupported components
  static Tokenizer from_json(std::string_view json_text);

  // allow_special=false: the text of special tokens (special: true, like
  // <|im_start|>) is encoded as plain text, for untrusted content; added
  // tokens with special: false (<think>, <tool_call>) still match, as with
  // HF's encode_special_tokens. Invalid UTF-8 -> Error with the byte offset.
  std::vector<int32_t> encode(std::string_view text, bool allow_special = true) const;
  // encode's ids, or nullopt when the text has more than max_tokens of them,
  // found without encoding the rest of a huge text: encoding stops past the
  // limit, and a pre-tokenizer piece longer than the remaining tokens of the
  // longest vocabulary entry's bytes is not BPE'd at all.
  std::optional<std::vector<int32_t>> encode_at_most(std::string_view text, size_t max_tokens,
                                                     bool allow_special = true) const;
  // HF's ids for a text encoded with add_special_tokens (its default, and
  // what embedding models expect): the post-processor's special tokens
  // around `ids` (Qwen3-Embedding appends <|endoftext|>; Qwen3's adds none).
  std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const;
  bool adds_special_tokens() const { return !special_prefix_.empty() || !special_suffix_.empty(); }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // vocab (byte-level string) or added token
  std::string id_to_piece(int32_t id) const;  // raw vocab string (byte-level chars), "" when none
  bool is_special(int32_t id) const;          // added token with special: true
  bool names_token(int32_t id) const;         // false for ids the vocabulary lacks
  // The bytes `id` decodes to ("" when it names no token); may be a fragment of a UTF-8 character.
  std::string_view token_bytes(int32_t id) const;
  // One past the largest id that names a token (151,669 for Qwen3, whose
  // embedding has 151,936 rows: the ids in between name nothing).
  size_t vocab_size() const { return kind_.size(); }

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

 private:
  enum Kind : uint8_t { kNone, kVocab, kAdded, kSpecial };
  struct SharedCache;

  Tokenizer(const TokenizerJson& spec, const std::string& origin);
  // Both return false as soon as ids would exceed max_tokens.
  bool encode_into(std::string_view text, bool allow_special, size_t max_tokens, std::vector<int32_t>& ids) const;
  struct AddedTokenSplits;
  bool encode_stretch(std::string_view text, const AddedTokenMatcher& normalized_added, std::vector<int32_t>& ids,
                      BpeCache* cache, size_t max_tokens) const;
  bool encode_words(std::string_view text, std::vector<int32_t>& ids, BpeCache* cache, size_t max_tokens) const;
  static std::string_view slice(const std::string& arena, const std::vector<uint32_t>& offsets, int32_t id);

  std::vector<Kind> kind_;               // by id
  std::string pieces_;                   // byte-level strings, by id
  std::vector<uint32_t> piece_offsets_;  // id -> [offsets[id], offsets[id + 1]) in pieces_
  std::string bytes_;                    // decoded bytes, by id
  std::vector<uint32_t> byte_offsets_;
  size_t longest_token_bytes_ = 1;  // a piece of n bytes has at least n / this many tokens
  StringTable<int32_t> id_of_piece_;
  BpeModel bpe_;
  // The added tokens matched in the raw text and those matched in the
  // normalized text (AddedToken::normalized).
  struct AddedTokenSplits {
    AddedTokenMatcher raw, normalized;
  };
  AddedTokenSplits added_;        // all added tokens
  AddedTokenSplits added_plain_;  // those with special: false
  bool nfc_ = false;
  std::vector<int32_t> special_prefix_, special_suffix_;  // the post-processor's (with_special_tokens)
  std::unique_ptr<SharedCache> cache_;
};

}  // namespace qinfer
