#include "text/grammar/token_trie.h"

#include <algorithm>
#include <array>
#include <unordered_map>

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

namespace {

// The states of one walk, each with its steps by byte once taken: the walk
// interns its nodes, so equal states are equal values, and inside a JSON
// string most bytes lead back to the same state: most of the walk is table
// lookups.
class StateTable {
 public:
  static constexpr int32_t kUnknown = -2, kNone = -1;  // step not taken yet / state not in the table
  static constexpr size_t kMaxStates = 4096;           // 1 KiB of steps a state

  // The id of `s`, or kNone once the table is full (a grammar whose states
  // follow every byte, such as a long enum).
  int32_t intern(const MatchState& s) {
    if (states_.size() == kMaxStates) {
      auto it = ids_.find(s);
      return it == ids_.end() ? kNone : it->second;
    }
    auto [it, added] = ids_.try_emplace(s, static_cast<int32_t>(states_.size()));
    if (added) {
      states_.push_back(&it->first);
      next_.emplace_back();
      next_.back().fill(kUnknown);
    }
    return it->second;
  }
  const MatchState& state(int32_t id) const { return *states_[id]; }
  int32_t& next(int32_t id, uint8_t byte) { return next_[id][byte]; }

 private:
  struct Hash {
    size_t operator()(const MatchState& s) const {
      size_t h = s.accepting;
      for (const Frame& f : s.stacks) h = h * 1000003u ^ (size_t{f.pos} << 32 | f.parent);
      return h;
    }
  };
  std::unordered_map<MatchState, int32_t, Hash> ids_;
  std::vector<const MatchState*> states_;
  std::vector<std::array<int32_t, 256>> next_;
};

constexpr size_t kMaxWalkNodes = size_t{1} << 20;

}  // namespace

void TokenTrie::allowed(Matcher& matcher, std::vector<uint64_t>& allowed, uint64_t max_work) const {
  const uint64_t work_before = matcher.work();
  const size_t mark = matcher.mark();
  allowed.assign((vocab_size_ + 63) / 64, 0);
  StateTable table;
  // Along the current path, per depth d (bytes so far): the state's id in the
  // table, or kNone with the state itself in loose[d].
  std::vector<int32_t> ids(max_depth_ + 1);
  std::vector<MatchState> loose(max_depth_ + 1);
  ids[0] = table.intern(matcher.state());
  if (ids[0] == StateTable::kNone) loose[0] = matcher.state();
  for (size_t i = 1; i < nodes_.size();) {
    const Node& n = nodes_[i];
    const size_t d = n.depth;
    const int32_t from = ids[d - 1];
    int32_t to = from >= 0 ? table.next(from, n.byte) : StateTable::kNone;
    if (to < 0) {
      matcher.walk_step(from >= 0 ? table.state(from) : loose[d - 1], n.byte, loose[d]);
      if (matcher.work() - work_before > max_work || matcher.mark() - mark > kMaxWalkNodes) {
        matcher.forget(mark);
        fail("the output's grammar is too ambiguous to follow: one token mask took over ", max_work,
             " units of work (stacks read and expanded)");
      }
      const bool first = to == StateTable::kUnknown;
      to = table.intern(loose[d]);
      if (first) table.next(from, n.byte) = to;
    }
    if (to >= 0 ? table.state(to).dead() : loose[d].dead()) {
      i = n.subtree_end;
      continue;
    }
    ids[d] = to;
    for (uint32_t t = n.token_begin; t < n.token_begin + n.token_count; ++t) {
      const auto id = static_cast<size_t>(token_ids_[t]);
      allowed[id / 64] |= uint64_t{1} << (id % 64);
    }
    ++i;
  }
  matcher.forget(mark);
}

}  // namespace qinfer::grammar
