// What embedding frontends (qinfer embed, the server's /v1/embeddings) make of
// a text and of the final hidden state the engine gives for it, as
// Qwen3-Embedding is used through transformers / sentence-transformers: the
// tokenizer's special tokens around the text (it appends <|endoftext|>), the
// last position's state, L2-normalized.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace qinfer {

// The ids of a text as HF's tokenizer(text) gives them (add_special_tokens).
std::vector<int32_t> embedding_input_ids(const Tokenizer& tokenizer, std::string_view text);

// Qwen3-Embedding's query form, instruction first: "Instruct: {task}\nQuery:{text}".
std::string embedding_query(std::string_view task, std::string_view text);

// The first `dimensions` values of the state (0: all; Matryoshka truncation,
// OpenAI's `dimensions`), divided by their L2 norm unless normalize is false.
// Error for dimensions outside [0, state size].
std::vector<float> embedding_vector(std::span<const float> hidden, int64_t dimensions, bool normalize);

}  // namespace qinfer
