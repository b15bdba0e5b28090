// Drafts for speculative decoding without a draft model (prompt lookup, as
// vLLM's "ngram" method and llama.cpp's lookup decoding): the ids that
// followed the latest earlier occurrence of the sequence's last n ids, for
// the longest n in [min_ngram, max_ngram] that occurs. Text that quotes its
// context (code edits, extraction, answers over documents) or repeats itself
// drafts well; elsewhere nothing is found and nothing is proposed. The
// engine verifies a draft in one forward pass and keeps what the model would
// have produced anyway, so drafts change speed, never the output. Pure logic.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace qinfer::engine {

struct NgramDraftOptions {
  int32_t max_tokens = 0;  // ids drafted a step at most; 0: no drafts (speculation off)
  int32_t min_ngram = 2;
  int32_t max_ngram = 4;
};

// Error naming the field for sizes out of range (min_ngram >= 1, max_ngram
// >= min_ngram, max_tokens >= 0, each at most 1024).
void validate(const NgramDraftOptions& options);

// Sets `draft` to at most `max_tokens` ids to follow `ids`: those after the
// latest earlier match of ids' last n, a copy that may run into the ids it
// copies (as LZ77 does), so text repeating with a short period drafts whole.
// Empty when no suffix of min_ngram ids or more recurs.
void ngram_draft(std::span<const int32_t> ids, const NgramDraftOptions& options, int64_t max_tokens,
                 std::vector<int32_t>& draft);

}  // namespace qinfer::engine
