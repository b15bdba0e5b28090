#include "engine/ngram_draft.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::engine {

namespace {
constexpr int32_t kMaxDraftSize = 1024;
}

void validate(const NgramDraftOptions& o) {
  if (o.max_tokens < 0 || o.max_tokens > kMaxDraftSize)
    fail("draft tokens must be between 0 (off) and ", kMaxDraftSize, ", got ", o.max_tokens);
  if (o.min_ngram < 1 || o.min_ngram > kMaxDraftSize)
    fail("the shortest n-gram to look up must be between 1 and ", kMaxDraftSize, ", got ", o.min_ngram);
  if (o.max_ngram < o.min_ngram || o.max_ngram > kMaxDraftSize)
    fail("the longest n-gram to look up must be between the shortest (", o.min_ngram, ") and ", kMaxDraftSize, ", got ",
         o.max_ngram);
}

void ngram_draft(std::span<const int32_t> ids, const NgramDraftOptions& o, int64_t max_tokens,
                 std::vector<int32_t>& draft) {
  draft.clear();
  const int64_t want = std::min<int64_t>(o.max_tokens, max_tokens);
  const int64_t len = static_cast<int64_t>(ids.size());
  if (want <= 0) return;
  for (int64_t n = std::min<int64_t>(o.max_ngram, len - 1); n >= o.min_ngram; --n) {
    const auto suffix = ids.end() - n;
    // Latest first: the nearest context is the likeliest to be repeated.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      const auto at = ids.begin() + start;
      if (at[n - 1] != suffix[n - 1] || !std::equal(at, at + n - 1, suffix)) continue;
      for (int64_t from = start + n; static_cast<int64_t>(draft.size()) < want; ++from)
        draft.push_back(from < len ? ids[static_cast<size_t>(from)] : draft[static_cast<size_t>(from - len)]);
      return;
    }
  }
}

}  // namespace qinfer::engine
