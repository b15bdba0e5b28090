#include "text/grammar/token_trie.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : vocab_size_(token_bytes.size()) {
  std::vector<int32_t> ids;
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (token_bytes[id].size() > UINT16_MAX) fail("token ", id, " is longer than ", UINT16_MAX, " bytes");
    if (!token_bytes[id].empty()) ids.push_back(static_cast<int32_t>(id));
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return token_bytes[a] < token_bytes[b] || (token_bytes[a] == token_bytes[b] && a < b);
  });
  // Sorted strings give the nodes in depth-first order: each token shares
  // the path of its common prefix with the one before and adds the rest.
  nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> path{0};  // node per depth along the previous token
  const std::string* previous = nullptr;
  for (int32_t id : ids) {
    const std::string& s = token_bytes[id];
    size_t common = 0;
    if (previous)
      while (common < previous->size() && common < s.size() && (*previous)[common] == s[common]) ++common;
    while (path.size() > common + 1) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({0, 0, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
    }
    Node& end = nodes_[path.back()];
    if (end.token_count == 0) end.token_begin = static_cast<uint32_t>(token_ids_.size());
    ++end.token_count;
    token_ids_.push_back(id);
    max_depth_ = std::max(max_depth_, s.size());
    previous = &s;
  }
  for (uint32_t n : path) nodes_[n].subtree_end = static_cast<uint32_t>(nodes_.size());
}

void TokenTrie::allowed(Matcher& matcher, std::vector<uint64_t>& allowed, uint64_t max_work) const {
  const uint64_t work_before = matcher.work();
  allowed.assign((vocab_size_ + 63) / 64, 0);
  // states[d]: the state after the first d bytes of the current path;
  // marks[d]: the matcher's scratch nodes up to it (what deeper steps may drop).
  std::vector<MatchState> states(max_depth_ + 1);
  std::vector<size_t> marks(max_depth_ + 1);
  states[0] = matcher.state();
  marks[0] = matcher.mark();
  for (size_t i = 1; i < nodes_.size();) {
    const Node& n = nodes_[i];
    matcher.release(marks[n.depth - 1]);
    MatchState& state = states[n.depth];
    matcher.try_step(states[n.depth - 1], n.byte, state);
    if (matcher.work() - work_before > max_work) {
      matcher.release(marks[0]);
      fail("the output's grammar is too ambiguous to follow: one token mask took over ", max_work, " steps");
    }
    if (state.dead()) {
      i = n.subtree_end;
      continue;
    }
    marks[n.depth] = matcher.mark();
    for (uint32_t t = n.token_begin; t < n.token_begin + n.token_count; ++t) {
      const auto id = static_cast<size_t>(token_ids_[t]);
      allowed[id / 64] |= uint64_t{1} << (id % 64);
    }
    ++i;
  }
  matcher.release(marks[0]);
}

}  // namespace qinfer::grammar
