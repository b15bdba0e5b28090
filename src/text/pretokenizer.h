// The Qwen2 pre-tokenizer: Hugging Face's Split pre-tokenizer with the regex
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and behavior Isolated, written out by hand: the alternatives in order, each
// with the backtracking Oniguruma would do, over the code point classes of
// unicode_classes.h. Every code point is a letter, a number, whitespace or
// "other", and each class starts some alternative, so the matches tile the
// text and Isolated yields exactly them. tests/text/pretokenizer_test.cpp
// checks this against Oniguruma running the regex itself, and
// hf_differential_test.cpp against HF.
#pragma once
#include <cstddef>
#include <string_view>

namespace qinfer {

inline constexpr std::string_view kQwen2PreTokenizerRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// End of the regex match that starts at `pos` (< text.size()) in `text`,
// which must be valid UTF-8. The match is never empty.
size_t qwen2_piece_end(std::string_view text, size_t pos);

// Calls on_piece(std::string_view) for each piece of `text`, in order.
template <class OnPiece>
void for_each_qwen2_piece(std::string_view text, OnPiece&& on_piece) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = qwen2_piece_end(text, pos);
    on_piece(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace qinfer
