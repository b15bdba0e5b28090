// The KV pool's blocks: a free list, reference counts, and a prefix cache of
// full blocks keyed by a hash chained over their token ids (so a block's key
// names its whole prefix). The hash only finds candidates: a block matches
// when its own ids are equal and it was computed after the very block (and
// that block's contents: a generation count) the lookup matched before it,
// under the same LoRA adapter and cache salt, so a collision, even one a client crafts, never
// hands one prompt's keys and values to another. A cached block nobody references stays cached until its
// space is needed, the least recently freed first (LRU). Pure logic, no
// model: the tests drive it with made-up sequences.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/sequence.h"

namespace qinfer::engine {

// A block's key from its parent's key and its own ids (FNV-1a by default; the
// tests pass a weak one to force collisions).
using ChainHash = uint64_t (*)(uint64_t parent, const int32_t* ids, int32_t n);
uint64_t fnv1a_chain_hash(uint64_t parent, const int32_t* ids, int32_t n);

class BlockManager {
 public:
  BlockManager(int32_t n_blocks, int32_t block_size, ChainHash hash = fnv1a_chain_hash);

  int32_t block_size() const { return block_size_; }
  int32_t n_blocks() const { return static_cast<int32_t>(refs_.size()); }
  // Blocks no sequence holds (cached ones included: they can be reclaimed).
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  // Blocks held by live sequences.
  int32_t used_blocks() const { return n_blocks() - free_blocks(); }
  // The most ever held at once (a sequence that ends within the step that took its blocks counts too).
  int32_t peak_used_blocks() const { return peak_used_; }

  // Sets a new sequence's blocks to the longest run of cached full blocks
  // that match its ids (never all of them: the last id is computed again so
  // the step yields its logits; none when it wants every prompt position's),
  // and `computed`/`cached` to their length.
  // Returns the tokens looked up (all of the sequence's, as vLLM counts a
  // query) and the blocks found, for record_lookup().
  struct Lookup {
    int64_t tokens = 0, found_blocks = 0;
  };
  Lookup match_prefix(Sequence& seq);
  // Counts a lookup whose sequence was admitted (a retried admission is not
  // counted twice).
  void record_lookup(const Lookup& l) {
    queries_ += l.tokens;
    hits_ += l.found_blocks * block_size_;
  }
  // Grows seq.blocks to cover `positions` positions; false (and no change)
  // when the free blocks do not suffice.
  bool reserve(Sequence& seq, int64_t positions);
  // Registers the sequence's newly full, computed blocks in the prefix cache.
  void seal(Sequence& seq);
  // Drops the sequence's references; its blocks become free (cached ones
  // stay reusable until reclaimed). Leaves seq with no blocks, computed (and draft_computed) 0.
  void release(Sequence& seq);

  // The times `block` was handed out for new contents: a version of them
  // (block -1, none: 0).
  uint64_t generation(int32_t block) const { return block < 0 ? 0 : generation_[static_cast<size_t>(block)]; }

  int64_t prefix_queries() const { return queries_; }  // tokens looked up
  int64_t prefix_hits() const { return hits_; }        // of them, found cached

 private:
  struct Cached {
    uint64_t hash = 0;         // 0: not cached
    std::vector<int32_t> ids;  // the block's own tokens
    int32_t parent = -1;       // the block before it when it was computed (-1: it is the first)
    uint64_t parent_generation = 0;
    int32_t adapter = -1;                           // the named LoRA adapter it was computed with (Sequence::adapter)
    std::shared_ptr<const std::string> cache_salt;  // Sequence::cache_salt of the one that computed it
    // Whether `seq` may take it: the same adapter and salt (a lookup's hash only finds candidates).
    bool same_kind(const Sequence& seq) const;
  };
  uint64_t chain_hash(uint64_t parent, const int32_t* ids) const;
  int32_t take_block();  // a free block, reclaiming the least recently used cached one if needed
  void uncache(int32_t block);

  int32_t block_size_;
  ChainHash hash_;
  std::vector<uint64_t> generation_;  // per block: counts the times it was handed out for new contents
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;                          // uncached, unreferenced
  std::list<int32_t> lru_;                             // cached, unreferenced: front = oldest
  std::vector<std::list<int32_t>::iterator> lru_pos_;  // where each block sits in lru_ (if it does)
  std::vector<bool> in_lru_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::vector<Cached> cached_;  // per block; hash 0 = not cached
  int64_t queries_ = 0, hits_ = 0;
  int32_t peak_used_ = 0;
};

}  // namespace qinfer::engine
