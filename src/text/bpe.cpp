#include "text/bpe.h"

#include <algorithm>

namespace qinfer {
namespace {

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  return k ^ (k >> 33);
}

struct Symbol {
  int32_t id;  // -1: merged into its left neighbour
  int32_t prev, next;
};

struct Candidate {
  uint32_t rank;
  int32_t pos;
  int32_t merged;
  // std heap functions build a max-heap: "less" means popped later, so the
  // lowest rank, then the leftmost position, comes out first.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<BpeMerge>& merges)
    : byte_ids_(byte_ids) {
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity *= 2;
  pairs_.assign(capacity, Pair{});
  mask_ = capacity - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMerge& m = merges[rank];
    const uint64_t key = pair_key(m.left, m.right);
    size_t i = mix(key) & mask_;
    while (pairs_[i].key != kEmpty && pairs_[i].key != key) i = (i + 1) & mask_;
    pairs_[i] = Pair{key, static_cast<uint32_t>(rank), m.merged};
  }
}

const BpeModel::Pair* BpeModel::find(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    const Pair& p = pairs_[i];
    if (p.key == key) return &p;
    if (p.key == kEmpty) return nullptr;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(word.size());
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> queue;
  symbols.resize(n);
  queue.clear();
  for (int32_t i = 0; i < n; ++i) symbols[i] = Symbol{byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1};
  symbols[n - 1].next = -1;
  for (int32_t i = 0; i + 1 < n; ++i)
    if (const Pair* p = find(symbols[i].id, symbols[i + 1].id)) queue.push_back({p->rank, i, p->merged});
  std::make_heap(queue.begin(), queue.end());

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // A stale entry: one of its symbols has merged since it was queued.
    const Pair* now = find(left.id, right.id);
    if (now == nullptr || now->merged != top.merged) continue;

    left.id = top.merged;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const Pair* p = find(symbols[left.prev].id, left.id)) {
        queue.push_back({p->rank, left.prev, p->merged});
        std::push_heap(queue.begin(), queue.end());
      }
    }
    if (left.next >= 0) {
      if (const Pair* p = find(left.id, symbols[left.next].id)) {
        queue.push_back({p->rank, top.pos, p->merged});
        std::push_heap(queue.begin(), queue.end());
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

std::span<const int32_t> BpeCache::find(std::string_view word) const {
  const Ids* ids = table_.find(word);
  if (ids == nullptr) return {};
  return std::span<const int32_t>(ids_).subspan(ids->offset, ids->count);
}

void BpeCache::insert(std::string_view word, std::span<const int32_t> ids) {
  if (word.size() > kMaxWordBytes) return;
  if (table_.size() >= kMaxEntries) {  // full: start over rather than keep stale words forever
    table_.clear();
    ids_.clear();
  }
  if (table_.insert(word, Ids{static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(ids.size())}))
    ids_.insert(ids_.end(), ids.begin(), ids.end());
}

}  // namespace qinfer
