#include "runtime/prediction.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace qinfer {

namespace {

uint32_t hash_of(std::span<const int32_t> ids) {
  uint32_t h = 2166136261u;  // FNV-1a over the ids; a match is checked id by id
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 16777619u;
  return h;
}

bool before(uint32_t hash, int64_t start, uint32_t other_hash, int64_t other_start) {
  return hash != other_hash ? hash < other_hash : start < other_start;
}

}  // namespace

Prediction::Prediction(std::vector<int32_t> ids) : ids_(std::move(ids)) {
  if (ids_.size() > static_cast<size_t>(INT32_MAX)) fail("a prediction of ", ids_.size(), " ids is too long");
  const std::span<const int32_t> p = ids_;
  const auto len = static_cast<int64_t>(p.size());
  for (int32_t n = kMinNgram; n <= kMaxNgram; ++n) {
    std::vector<Entry>& entries = index_[n - kMinNgram];
    entries.reserve(static_cast<size_t>(std::max<int64_t>(len - n, 0)));
    for (int64_t start = 0; start + n < len; ++start)  // followed by at least one id
      entries.push_back(
          {hash_of(p.subspan(static_cast<size_t>(start), static_cast<size_t>(n))), static_cast<int32_t>(start)});
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return before(a.hash, a.start, b.hash, b.start); });
  }
}

int64_t Prediction::find(std::span<const int32_t> ngram, int64_t from) const {
  const auto n = static_cast<int32_t>(ngram.size());
  if (n < kMinNgram || n > kMaxNgram) return -1;
  const std::vector<Entry>& entries = index_[n - kMinNgram];
  const uint32_t h = hash_of(ngram);
  auto at_or_after = [&](int64_t start) {
    return std::partition_point(entries.begin(), entries.end(),
                                [&](const Entry& e) { return before(e.hash, e.start, h, start); });
  };
  const auto first = at_or_after(0), end = at_or_after(INT64_MAX);
  auto matches = [&](const Entry& e) {  // not another n-gram of the same hash
    return e.hash == h && std::equal(ngram.begin(), ngram.end(), ids_.begin() + e.start);
  };
  for (auto it = at_or_after(from); it != end; ++it)
    if (matches(*it)) return it->start;
  for (auto it = first; it != end && it->start < from; ++it)
    if (matches(*it)) return it->start;
  return -1;
}

}  // namespace qinfer
