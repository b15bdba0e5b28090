// The KV pool's blocks: a free list, reference counts, and a prefix cache of
// full blocks keyed by a hash chained over their token ids (so a block's key
// names its whole prefix), with the ids kept to rule out collisions. A
// cached block nobody references stays cached until its space is needed, the
// least recently freed first (LRU). Pure logic, no model: the tests drive it
// with made-up sequences.
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/sequence.h"

namespace qinfer::engine {

class BlockManager {
 public:
  BlockManager(int32_t n_blocks, int32_t block_size);

  int32_t block_size() const { return block_size_; }
  int32_t n_blocks() const { return static_cast<int32_t>(refs_.size()); }
  // Blocks no sequence holds (cached ones included: they can be reclaimed).
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  // Blocks held by live sequences.
  int32_t used_blocks() const { return n_blocks() - free_blocks(); }

  // Sets a new sequence's blocks to the longest run of cached full blocks
  // that match its ids (never all of them: the last id is computed again so
  // the step yields its logits), and `computed`/`cached` to their length.
  // Returns the blocks looked up and found, for record_lookup().
  struct Lookup {
    int64_t queries = 0, hits = 0;
  };
  Lookup match_prefix(Sequence& seq);
  // Counts a lookup whose sequence was admitted (a retried admission is not
  // counted twice).
  void record_lookup(const Lookup& l) {
    queries_ += l.queries;
    hits_ += l.hits;
  }
  // Grows seq.blocks to cover `positions` positions; false (and no change)
  // when the free blocks do not suffice.
  bool reserve(Sequence& seq, int64_t positions);
  // Registers the sequence's newly full, computed blocks in the prefix cache.
  void seal(Sequence& seq);
  // Drops the sequence's references; its blocks become free (cached ones
  // stay reusable until reclaimed). Leaves seq with no blocks, computed 0.
  void release(Sequence& seq);

  int64_t prefix_queries() const { return queries_; }  // blocks looked up
  int64_t prefix_hits() const { return hits_; }        // of them, found cached

 private:
  struct Cached {
    uint64_t hash;
    std::vector<int32_t> ids;  // the block's own tokens
    uint64_t parent;           // hash of the block before (0 for the first)
  };
  uint64_t chain_hash(uint64_t parent, const int32_t* ids) const;
  int32_t take_block();  // a free block, reclaiming the least recently used cached one if needed
  void uncache(int32_t block);

  int32_t block_size_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;                          // uncached, unreferenced
  std::list<int32_t> lru_;                             // cached, unreferenced: front = oldest
  std::vector<std::list<int32_t>::iterator> lru_pos_;  // where each block sits in lru_ (if it does)
  std::vector<bool> in_lru_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::vector<Cached> cached_;  // per block; hash 0 = not cached
  int64_t queries_ = 0, hits_ = 0;
};

}  // namespace qinfer::engine
