// An open-addressing hash table from byte strings to small values, the keys
// copied into one arena: the vocabulary lookup and the BPE word cache, both
// hit once or more per word, where std::unordered_map's node per entry and
// std::string key cost more than the work around them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace qinfer {

inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 29);
}

template <class Value>
class StringTable {
  static_assert(std::is_trivially_copyable_v<Value>);

 public:
  explicit StringTable(size_t expected_entries = 0) { rehash(capacity_for(expected_entries)); }

  // Bulk users (loading 150k tokens) hash a batch of keys, prefetch their
  // slots, then look them up: the probes are cache misses, and overlapping
  // them makes loading several times faster.
  static uint64_t hash_of(std::string_view key) { return hash_bytes(key) | 1; }  // never 0 (the empty mark)
  void prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }

  // Adds key -> value unless the key is present; returns whether it was added.
  bool insert(std::string_view key, Value value) { return insert(key, value, hash_of(key)); }
  bool insert(std::string_view key, Value value, uint64_t h) {
    if ((count_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.hash == 0) {
        s = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), value};
        arena_.append(key);
        ++count_;
        return true;
      }
      if (s.hash == h && key_of(s) == key) return false;
    }
  }

  const Value* find(std::string_view key) const { return find(key, hash_of(key)); }
  const Value* find(std::string_view key, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.hash == 0) return nullptr;
      if (s.hash == h && key_of(s) == key) return &s.value;
    }
  }

  size_t size() const { return count_; }
  size_t key_bytes() const { return arena_.size(); }
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    arena_.clear();
    count_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    uint32_t key_offset = 0;
    uint32_t key_size = 0;
    Value value{};
  };

  static size_t capacity_for(size_t entries) {
    size_t n = 16;
    while (n * 3 < entries * 4 + 4) n *= 2;
    return n;
  }
  std::string_view key_of(const Slot& s) const { return std::string_view(arena_).substr(s.key_offset, s.key_size); }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].hash != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::string arena_;
  size_t count_ = 0;
};

}  // namespace qinfer
