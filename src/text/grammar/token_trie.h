// The vocabulary as a trie of token bytes, for token masks: which tokens may
// come next is one walk over the trie from the matcher's state, where a byte
// the grammar refuses cuts off every token below it (in JSON, outside
// strings, nearly the whole vocabulary at the first or second byte).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/grammar/matcher.h"

namespace qinfer::grammar {

class TokenTrie {
 public:
  // token_bytes[id]: what token id decodes to; empty: never allowed (special
  // tokens, ids that name nothing).
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  size_t vocab_size() const { return vocab_size_; }
  // Sets bit id of `allowed` (resized to vocab_size bits, cleared first) for
  // every token all of whose bytes the matcher's state accepts. Throws
  // qinfer::Error past `max_work` (Matcher::work()): a grammar so ambiguous
  // that one mask would hold the whole batch for tens of milliseconds (the
  // work runs at 15-45 ns a unit on Zen 5; a JSON string's mask takes ~15
  // thousand on Qwen3's vocabulary, the costliest real schema mask measured,
  // inside a "format": "uri" string, ~230 thousand).
  void allowed(Matcher& matcher, std::vector<uint64_t>& allowed, uint64_t max_work = uint64_t{1} << 20) const;

 private:
  struct Node {            // in depth-first order; the root is node 0
    uint32_t subtree_end;  // one past the last node below this one
    uint32_t token_begin;  // ids of the tokens that end here: token_ids_[begin, begin + count)
    uint32_t token_count;
    uint16_t depth;
    uint8_t byte;
  };
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  size_t vocab_size_;
  size_t max_depth_ = 0;
};

}  // namespace qinfer::grammar
