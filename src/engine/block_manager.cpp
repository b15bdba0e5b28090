#include "engine/block_manager.h"

#include <algorithm>
#include <functional>

#include "util/error.h"

namespace qinfer::engine {

BlockManager::BlockManager(int32_t n_blocks, int32_t block_size, ChainHash hash)
    : block_size_(block_size),
      hash_(hash),
      generation_(static_cast<size_t>(n_blocks), 0),
      refs_(static_cast<size_t>(n_blocks), 0),
      lru_pos_(static_cast<size_t>(n_blocks)),
      in_lru_(static_cast<size_t>(n_blocks), false),
      cached_(static_cast<size_t>(n_blocks)) {
  if (n_blocks <= 0 || block_size <= 0) fail("KV pool of ", n_blocks, " blocks of ", block_size, " positions");
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 handed out first
}

uint64_t fnv1a_chain_hash(uint64_t parent, const int32_t* ids, int32_t n) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(parent);
  for (int32_t i = 0; i < n; ++i) mix(static_cast<uint32_t>(ids[i]));
  return h;
}

bool BlockManager::Cached::same_kind(const Sequence& seq) const {
  if (adapter != seq.adapter) return false;
  if (!cache_salt || !seq.cache_salt) return !cache_salt && !seq.cache_salt;
  return *cache_salt == *seq.cache_salt;
}

// Never 0 (0 = not cached).
uint64_t BlockManager::chain_hash(uint64_t parent, const int32_t* ids) const {
  const uint64_t h = hash_(parent, ids, block_size_);
  return h ? h : 1;
}

void BlockManager::uncache(int32_t block) {
  Cached& c = cached_[static_cast<size_t>(block)];
  if (c.hash) {
    auto it = by_hash_.find(c.hash);
    if (it != by_hash_.end() && it->second == block) by_hash_.erase(it);
  }
  c = Cached{};
}

int32_t BlockManager::take_block() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    b = lru_.front();  // the least recently freed cached block gives up its contents
    lru_.pop_front();
    in_lru_[static_cast<size_t>(b)] = false;
    uncache(b);
  }
  refs_[static_cast<size_t>(b)] = 1;
  ++generation_[static_cast<size_t>(b)];  // new contents: blocks computed after the old ones are not its children
  return b;
}

BlockManager::Lookup BlockManager::match_prefix(Sequence& seq) {
  Lookup lookup;
  // Keep one id to compute; all of them when every prompt position's logits are wanted.
  const int64_t usable = seq.wants_prompt_logits ? 0 : (static_cast<int64_t>(seq.ids.size()) - 1) / block_size_;
  // Each adapter's and salt's chains start from their own root (its keys and
  // values are its own); equal ids under another adapter or salt are another block.
  uint64_t parent = static_cast<uint64_t>(seq.adapter + 1);
  if (seq.cache_salt) parent ^= std::hash<std::string>{}(*seq.cache_salt);
  int32_t parent_block = -1;
  // Every token, as vLLM counts a query: a hit rate of full blocks only read higher than vLLM's for the same work.
  lookup.tokens = static_cast<int64_t>(seq.ids.size());
  for (int64_t i = 0; i < usable; ++i) {
    const int32_t* ids = &seq.ids[static_cast<size_t>(i * block_size_)];
    const uint64_t h = chain_hash(parent, ids);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const int32_t b = it->second;
    const Cached& c = cached_[static_cast<size_t>(b)];
    if (!c.same_kind(seq) || c.parent != parent_block || c.parent_generation != generation(parent_block) ||
        !std::equal(c.ids.begin(), c.ids.end(), ids))
      break;
    ++lookup.found_blocks;
    if (in_lru_[static_cast<size_t>(b)]) {
      lru_.erase(lru_pos_[static_cast<size_t>(b)]);
      in_lru_[static_cast<size_t>(b)] = false;
    }
    ++refs_[static_cast<size_t>(b)];
    seq.blocks.push_back(b);
    parent = h;
    parent_block = b;
  }
  seq.computed = seq.cached = static_cast<int64_t>(seq.blocks.size()) * block_size_;
  seq.sealed = static_cast<int64_t>(seq.blocks.size());
  seq.sealed_hash = parent;
  seq.sealed_block = parent_block;
  seq.sealed_generation = generation(parent_block);
  peak_used_ = std::max(peak_used_, used_blocks());
  return lookup;
}

bool BlockManager::reserve(Sequence& seq, int64_t positions) {
  const int64_t need = (positions + block_size_ - 1) / block_size_ - static_cast<int64_t>(seq.blocks.size());
  if (need <= 0) return true;
  if (need > free_blocks()) return false;
  for (int64_t i = 0; i < need; ++i) seq.blocks.push_back(take_block());
  peak_used_ = std::max(peak_used_, used_blocks());
  return true;
}

void BlockManager::seal(Sequence& seq) {
  const int64_t full = std::min<int64_t>(seq.computed / block_size_, static_cast<int64_t>(seq.blocks.size()));
  uint64_t parent = seq.sealed_hash;
  for (int64_t i = seq.sealed; i < full; ++i) {
    const int32_t b = seq.blocks[static_cast<size_t>(i)];
    const int32_t* ids = &seq.ids[static_cast<size_t>(i * block_size_)];
    const uint64_t h = chain_hash(parent, ids);
    int32_t chain = b;  // the block the next ones are computed after, as the cache sees it
    const auto it = by_hash_.find(h);
    const Cached* holder = it == by_hash_.end() ? nullptr : &cached_[static_cast<size_t>(it->second)];
    if (holder && holder->same_kind(seq) && holder->parent == seq.sealed_block &&
        holder->parent_generation == seq.sealed_generation && std::equal(holder->ids.begin(), holder->ids.end(), ids)) {
      chain = it->second;  // an equal block, computed after the same one: this one stays private, the chain goes on
    } else if (!holder || (holder->parent >= 0 && generation(holder->parent) != holder->parent_generation)) {
      // Free, or held by a block computed after contents its parent no longer holds (no lookup reaches it).
      // A block that collides but is still reachable keeps the key: this one stays private.
      cached_[static_cast<size_t>(b)] = Cached{h,
                                               std::vector<int32_t>(ids, ids + block_size_),
                                               seq.sealed_block,
                                               seq.sealed_generation,
                                               seq.adapter,
                                               seq.cache_salt};
      by_hash_[h] = b;
    }
    parent = h;
    seq.sealed = i + 1;
    seq.sealed_hash = h;
    seq.sealed_block = chain;
    seq.sealed_generation = generation(chain);
  }
}

void BlockManager::release(Sequence& seq) {
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) {  // the tail first: it is the least shared
    const int32_t b = *it;
    if (--refs_[static_cast<size_t>(b)] > 0) continue;
    if (cached_[static_cast<size_t>(b)].hash) {
      lru_pos_[static_cast<size_t>(b)] = lru_.insert(lru_.end(), b);
      in_lru_[static_cast<size_t>(b)] = true;
    } else {
      free_.push_back(b);
    }
  }
  seq.blocks.clear();
  seq.computed = seq.cached = seq.sealed = seq.draft_computed = 0;
  seq.sealed_hash = 0;
  seq.sealed_block = -1;
  seq.sealed_generation = 0;
}

}  // namespace qinfer::engine
