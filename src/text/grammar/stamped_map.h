// A hash map from 64-bit keys to 32-bit values that clear() empties in O(1)
// (each slot carries the generation that wrote it): the matcher clears its
// per-step sets at every byte, and a step of a large enum holds thousands.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace qinfer::grammar {

class StampedMap {
 public:
  void clear() {
    count_ = 0;
    if (++stamp_ == 0) {  // wrapped: forget every old stamp
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
  }
  // The value stored for `key`, storing `value` first when there is none;
  // second: whether it was stored now.
  std::pair<uint32_t, bool> find_or_insert(uint64_t key, uint32_t value) {
    if ((count_ + 1) * 2 > keys_.size()) grow();
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (stamps_[i] != stamp_) {
        stamps_[i] = stamp_;
        keys_[i] = key;
        values_[i] = value;
        ++count_;
        return {value, true};
      }
      if (keys_[i] == key) return {values_[i], false};
    }
  }

 private:
  size_t slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull >> 20) & (keys_.size() - 1); }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<uint32_t> values = std::move(values_), stamps = std::move(stamps_);
    const size_t size = std::max<size_t>(64, keys.size() * 2);
    keys_.assign(size, 0);
    values_.assign(size, 0);
    stamps_.assign(size, 0);
    const uint32_t live = stamp_;
    stamp_ = 1;
    count_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (stamps[i] == live) find_or_insert(keys[i], values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_, stamps_;
  uint32_t stamp_ = 1;
  size_t count_ = 0;
};

}  // namespace qinfer::grammar
