// BlockManager without a model: reference counts, the prefix cache (chained
// over whole blocks, never the last token, ids checked), LRU reclaiming.
#include "engine/block_manager.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace qinfer::engine;

namespace {

Sequence seq_of(std::vector<int32_t> ids, int64_t id = 0) {
  Sequence s;
  s.id = id;
  s.prompt_len = static_cast<int64_t>(ids.size());
  s.ids = std::move(ids);
  return s;
}

std::vector<int32_t> range_ids(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Computes the whole prompt, as the runner would, and seals its full blocks.
void compute_all(BlockManager& bm, Sequence& s) {
  ASSERT_TRUE(bm.reserve(s, static_cast<int64_t>(s.ids.size())));
  s.computed = static_cast<int64_t>(s.ids.size());
  bm.seal(s);
}

}  // namespace

TEST(BlockManager, ReserveAndReleaseCountBlocks) {
  BlockManager bm(8, 4);
  Sequence a = seq_of(range_ids(0, 10));
  EXPECT_TRUE(bm.reserve(a, 10));
  EXPECT_EQ(a.blocks.size(), 3u);
  EXPECT_EQ(bm.used_blocks(), 3);
  EXPECT_TRUE(bm.reserve(a, 12));  // still within the third block
  EXPECT_EQ(a.blocks.size(), 3u);
  Sequence b = seq_of(range_ids(100, 30));
  EXPECT_FALSE(bm.reserve(b, 30));  // 8 blocks needed, 5 free
  EXPECT_TRUE(b.blocks.empty());
  bm.release(a);
  EXPECT_EQ(bm.free_blocks(), 8);
  EXPECT_TRUE(a.blocks.empty());
  // The peak stays (batch reports it; read after a step, a sequence that ended in it had freed its blocks).
  EXPECT_EQ(bm.peak_used_blocks(), 3);
  Sequence c = seq_of(range_ids(200, 20));
  EXPECT_TRUE(bm.reserve(c, 20));
  EXPECT_EQ(bm.peak_used_blocks(), 5);
}

TEST(BlockManager, ASharedPrefixReusesFullBlocksOnly) {
  BlockManager bm(16, 4);
  Sequence a = seq_of(range_ids(0, 10));
  compute_all(bm, a);  // blocks [0..3], [4..7] sealed; [8, 9] partial
  Sequence b = seq_of(range_ids(0, 9));
  b.ids.push_back(77);  // same first 9 ids
  const BlockManager::Lookup lookup = bm.match_prefix(b);
  EXPECT_EQ(lookup.tokens, 10);
  EXPECT_EQ(lookup.found_blocks, 2);
  EXPECT_EQ(bm.prefix_queries(), 0);  // counted only once recorded (the sequence admitted)
  bm.record_lookup(lookup);
  EXPECT_EQ(b.cached, 8);
  EXPECT_EQ(b.computed, 8);
  ASSERT_EQ(b.blocks.size(), 2u);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_EQ(b.blocks[1], a.blocks[1]);
  // In tokens, as vLLM counts them: all 10 looked up, 8 found.
  EXPECT_EQ(bm.prefix_queries(), 10);
  EXPECT_EQ(bm.prefix_hits(), 8);
  // A prompt of exactly two blocks keeps its last token to compute: one block from the cache.
  Sequence c = seq_of(range_ids(0, 8));
  bm.match_prefix(c);
  EXPECT_EQ(c.cached, 4);
  // Same ids in a block but a different prefix: no hit (the hash is chained).
  std::vector<int32_t> other = range_ids(50, 4);
  const auto tail = range_ids(4, 5);
  other.insert(other.end(), tail.begin(), tail.end());
  Sequence d = seq_of(other);
  const BlockManager::Lookup missed = bm.match_prefix(d);
  EXPECT_EQ(d.cached, 0);
  // Hunt findings: a miss counted one block whatever the prompt's length, so the hit rate looked higher
  // than it was; then full blocks only (128 of 174 tokens), where vLLM counts every prompt token.
  EXPECT_EQ(missed.tokens, 9);
  EXPECT_EQ(missed.found_blocks, 0);
}

TEST(BlockManager, FreedCachedBlocksStayReusableUntilReclaimedOldestFirst) {
  BlockManager bm(4, 2);
  Sequence a = seq_of({1, 2, 3, 4, 5});
  compute_all(bm, a);  // 3 blocks, 2 sealed
  bm.release(a);
  EXPECT_EQ(bm.free_blocks(), 4);
  Sequence again = seq_of({1, 2, 3, 4, 9});
  bm.match_prefix(again);
  EXPECT_EQ(again.cached, 4);  // both sealed blocks came back from the LRU
  bm.release(again);
  // Filling the pool reclaims the cached blocks, the least recently freed first.
  Sequence big = seq_of(range_ids(100, 7));
  ASSERT_TRUE(bm.reserve(big, 7));
  EXPECT_EQ(bm.free_blocks(), 0);
  Sequence late = seq_of({1, 2, 3, 4, 5});
  bm.match_prefix(late);
  EXPECT_EQ(late.cached, 0);  // reclaimed: gone from the cache
}

TEST(BlockManager, ReferencedBlocksAreNeverReclaimed) {
  BlockManager bm(3, 2);
  Sequence a = seq_of({1, 2, 3});
  compute_all(bm, a);  // 2 blocks, 1 sealed, still referenced
  Sequence b = seq_of({9, 9, 9});
  EXPECT_FALSE(bm.reserve(b, 3));  // needs 2, 1 free: a's blocks are not taken
  EXPECT_TRUE(bm.reserve(b, 2));
  EXPECT_EQ(a.blocks.size(), 2u);
  EXPECT_NE(a.blocks[0], b.blocks[0]);
  EXPECT_NE(a.blocks[1], b.blocks[0]);
}

// A hunt finding (vLLM's CVE-2025-25183 class): a block matched when its own
// ids and its parent's *hash* were equal, so prompts whose chained hashes
// collide (FNV-1a is easy to collide on purpose) shared keys and values
// computed after different tokens. Here a weak hash, order-blind within a
// block, makes [2,1] collide with [1,2]: the attacker's block [5,6], computed
// after [2,1,3,4], must not serve a victim whose prompt starts [1,2,3,4].
TEST(BlockManager, AHashCollisionNeverSharesBlocksComputedAfterOtherTokens) {
  const ChainHash order_blind = [](uint64_t parent, const int32_t* ids, int32_t n) {
    uint64_t h = parent * 31 + 1;
    for (int32_t i = 0; i < n; ++i) h += static_cast<uint64_t>(ids[i]);
    return h;
  };
  BlockManager bm(16, 2, order_blind);
  Sequence first = seq_of({1, 2, 3, 4, 9}, 1);
  bm.match_prefix(first);
  compute_all(bm, first);
  Sequence attacker = seq_of({2, 1, 3, 4, 5, 6, 9}, 2);
  EXPECT_EQ(bm.match_prefix(attacker).found_blocks, 0) << "[2,1] collides with [1,2], but its ids differ";
  compute_all(bm, attacker);
  bm.release(attacker);
  Sequence victim = seq_of({1, 2, 3, 4, 5, 6, 9}, 3);
  EXPECT_EQ(bm.match_prefix(victim).found_blocks, 2) << "[1,2] [3,4] are first's; [5,6] came after [2,1,3,4]";
  EXPECT_EQ(victim.blocks, (std::vector<int32_t>{first.blocks[0], first.blocks[1]}));
  // The same holds once a block is handed out again: blocks computed after its old contents are not its children.
  bm.release(victim);
  bm.release(first);
  Sequence again = seq_of({2, 1, 3, 4, 5, 6, 9}, 4);
  EXPECT_EQ(bm.match_prefix(again).found_blocks, 0);
}

// A re-hunt finding of the exact chain: two sequences that computed the same
// first block at once left the second's copy private, and its later blocks
// named that private copy as their parent, so no lookup ever reached them:
// the shared prefix was all a conversation ever found cached again. Such a
// sequence now continues the chain of the equal block that holds the key.
TEST(BlockManager, SequencesThatComputedAPrefixAtOnceKeepCachingWhatFollowsIt) {
  BlockManager bm(32, 2);
  Sequence a = seq_of({1, 2, 3, 4, 9}, 1), b = seq_of({1, 2, 5, 6, 9}, 2);
  bm.match_prefix(a);
  bm.match_prefix(b);
  for (Sequence* s : {&a, &b}) {  // both computed before either seals
    ASSERT_TRUE(bm.reserve(*s, static_cast<int64_t>(s->ids.size())));
    s->computed = static_cast<int64_t>(s->ids.size());
  }
  bm.seal(a);
  bm.seal(b);
  Sequence c = seq_of({1, 2, 5, 6, 7, 8, 9}, 3);
  EXPECT_EQ(bm.match_prefix(c).found_blocks, 2) << "[1,2] from a, [5,6] from b";
  EXPECT_EQ(c.blocks, (std::vector<int32_t>{a.blocks[0], b.blocks[1]}));
  compute_all(bm, c);
  Sequence d = seq_of({1, 2, 5, 6, 7, 8, 9}, 4);
  EXPECT_EQ(bm.match_prefix(d).found_blocks, 3);
}

// The same re-hunt finding, as a resent prompt meets it: its last full block
// is computed again (one id is always left to compute) and stays private; the
// reply after it must still be found by the next turn, prompt + reply.
TEST(BlockManager, AResentPromptsReplyIsFoundByTheNextTurn) {
  BlockManager bm(32, 2);
  Sequence first = seq_of({1, 2, 3, 4}, 1);
  bm.match_prefix(first);
  compute_all(bm, first);
  bm.release(first);
  Sequence again = seq_of({1, 2, 3, 4}, 2);
  EXPECT_EQ(bm.match_prefix(again).found_blocks, 1);
  again.ids.insert(again.ids.end(), {5, 6, 9});  // its reply
  compute_all(bm, again);
  bm.release(again);
  Sequence next = seq_of({1, 2, 3, 4, 5, 6, 7}, 3);
  EXPECT_EQ(bm.match_prefix(next).found_blocks, 3);
}

// Keys and values computed under one LoRA adapter are that adapter's: the
// same ids under another adapter (or none) find nothing cached, even where
// their keys collide, and each adapter finds its own.
TEST(BlockManager, BlocksAreCachedForTheAdapterThatComputedThem) {
  for (const ChainHash hash : {ChainHash{fnv1a_chain_hash}, ChainHash{[](uint64_t, const int32_t*, int32_t) {
                                 return uint64_t{7};  // every key collides, the root's seed included
                               }}}) {
    BlockManager bm(32, 2, hash);
    Sequence alpha = seq_of(range_ids(0, 7), 1);
    alpha.adapter = 0;
    bm.match_prefix(alpha);
    compute_all(bm, alpha);
    bm.release(alpha);
    for (const int32_t other : {-1, 1}) {
      Sequence s = seq_of(range_ids(0, 7), 2);
      s.adapter = other;
      EXPECT_EQ(bm.match_prefix(s).found_blocks, 0) << "adapter " << other << " found adapter 0's blocks";
      compute_all(bm, s);
      bm.release(s);
    }
    Sequence again = seq_of(range_ids(0, 7), 3);
    again.adapter = 0;
    EXPECT_EQ(bm.match_prefix(again).found_blocks, hash == fnv1a_chain_hash ? 3 : 1)
        << "adapter 0 finds its own (with one key for all, its first block holds it)";
  }
}

// vLLM's cache_salt: blocks computed under a salt are found by requests with
// an equal salt only (another allocation of the same text included), never by
// unsalted ones or other salts, even where every key collides.
TEST(BlockManager, BlocksAreCachedForTheSaltThatComputedThem) {
  for (const ChainHash hash :
       {ChainHash{fnv1a_chain_hash}, ChainHash{[](uint64_t, const int32_t*, int32_t) { return uint64_t{7}; }}}) {
    BlockManager bm(32, 2, hash);
    Sequence salted = seq_of(range_ids(0, 7), 1);
    salted.cache_salt = std::make_shared<const std::string>("tenant-a");
    bm.match_prefix(salted);
    compute_all(bm, salted);
    bm.release(salted);
    int64_t id = 2;
    for (const char* other : {static_cast<const char*>(nullptr), "tenant-b", "tenant-", ""}) {
      Sequence s = seq_of(range_ids(0, 7), id++);
      if (other) s.cache_salt = std::make_shared<const std::string>(other);
      EXPECT_EQ(bm.match_prefix(s).found_blocks, 0)
          << "salt '" << (other ? other : "(none)") << "' found tenant-a's blocks";
      compute_all(bm, s);
      bm.release(s);
    }
    Sequence again = seq_of(range_ids(0, 7), id++);
    again.cache_salt = std::make_shared<const std::string>("tenant-a");
    EXPECT_EQ(bm.match_prefix(again).found_blocks, hash == fnv1a_chain_hash ? 3 : 1)
        << "an equal salt finds its blocks (with one key for all, its first block holds it)";
  }
}
