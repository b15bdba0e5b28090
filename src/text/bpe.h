// Byte-level BPE: a pre-tokenized word, as raw bytes, starts as one symbol per
// byte and merges pairs by rank until none applies, in exactly the order of
// Hugging Face's Word::merge_all (a min-heap on (rank, position), entries
// checked against the pair's merged id when popped). The model works on
// token ids, never on the byte-level strings of tokenizer.json.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/string_table.h"

namespace qinfer {

struct BpeMerge {
  int32_t left, right, merged;
};

class BpeModel {
 public:
  BpeModel() = default;
  // byte_ids[b]: the id of the token that is the single byte b; `merges` in
  // rank order (a pair listed twice keeps the later rank, as in HF).
  BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<BpeMerge>& merges);

  // Appends the ids of `word` (raw bytes, not empty).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  struct Pair {
    uint64_t key = kEmpty;  // left << 32 | right
    uint32_t rank = 0;
    int32_t merged = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  const Pair* find(int32_t left, int32_t right) const;

  std::array<int32_t, 256> byte_ids_{};
  std::vector<Pair> pairs_;  // open addressing, power-of-two size
  uint64_t mask_ = 0;
};

// Words already encoded, so that frequent words skip BPE. Not thread-safe:
// the tokenizer lends it to one encode call at a time.
class BpeCache {
 public:
  static constexpr size_t kMaxWordBytes = 128;  // longer words rarely repeat
  static constexpr size_t kMaxEntries = size_t(1) << 16;

  // The cached ids of `word`, empty when not cached.
  std::span<const int32_t> find(std::string_view word) const;
  void insert(std::string_view word, std::span<const int32_t> ids);

 private:
  struct Ids {
    uint32_t offset, count;
  };
  StringTable<Ids> table_;  // grows as needed: a small table stays in cache
  std::vector<int32_t> ids_;
};

}  // namespace qinfer
