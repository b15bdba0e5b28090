// A request's prediction (OpenAI's predicted outputs: the text its answer is
// expected to repeat, such as the file an edit rewrites) as ids, with an
// index of where each of its n-grams (n in [kMinNgram, kMaxNgram]) occurs.
// Built once by the frontend that takes the request, on its own thread, and
// shared by the request's choices; speculative decoding drafts from it
// (engine/prediction_draft.h). Pure data.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace qinfer {

class Prediction {
 public:
  static constexpr int32_t kMinNgram = 2, kMaxNgram = 4;

  explicit Prediction(std::vector<int32_t> ids);

  const std::vector<int32_t>& ids() const { return ids_; }
  // Where `ngram` (kMinNgram to kMaxNgram ids) first occurs at or after
  // `from`, else first from the start, followed by at least one id; -1 when
  // it does not.
  int64_t find(std::span<const int32_t> ngram, int64_t from) const;

 private:
  struct Entry {  // ordered by (hash, start)
    uint32_t hash;
    int32_t start;
  };
  std::vector<int32_t> ids_;
  std::vector<Entry> index_[kMaxNgram - kMinNgram + 1];  // per n
};

}  // namespace qinfer
