// Walks a Grammar byte by byte, as llama.cpp's grammar stacks do: a state is
// the set of stacks the bytes so far leave possible; a stack's top is the
// byte set the next byte must be in, the entries below it where each rule
// called returns to. A state holds each stack's top frame; the frames below
// are linked nodes in an arena, so a step shares what it does not change.
// Committed steps (advance) intern their nodes: equal states are equal
// values, which is what caches of token masks and of trie-walk steps key on.
// Trial steps (try_step) make scratch nodes that release() drops; a walk over
// the whole vocabulary interns its nodes too (walk_step) and forgets them at
// the end, so it leaves the arena as it found it.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/grammar/grammar.h"
#include "text/grammar/stamped_map.h"

namespace qinfer::grammar {

// A stack's top: the item to match next (a byte set) and the node of the
// frame it returns to (Matcher::kBottom: none).
struct Frame {
  uint32_t pos;
  uint32_t parent;
  bool operator==(const Frame&) const = default;
  bool operator<(const Frame& o) const { return pos < o.pos || (pos == o.pos && parent < o.parent); }
};

struct MatchState {
  std::vector<Frame> stacks;  // sorted when committed
  bool accepting = false;     // the bytes so far are a whole match
  bool dead() const { return stacks.empty() && !accepting; }
  bool operator==(const MatchState&) const = default;
};

class Matcher {
 public:
  // Throws qinfer::Error when one step would hold more than `max_stacks`
  // stacks (a grammar too ambiguous to follow).
  explicit Matcher(std::shared_ptr<const Grammar> grammar, size_t max_stacks = 4096);

  const MatchState& state() const { return state_; }
  const Grammar& grammar() const { return *grammar_; }
  // Consumes `bytes` if the grammar allows all of them; otherwise returns
  // false and keeps the state.
  bool advance(std::string_view bytes);
  // Whether `bytes` may follow (the state unchanged).
  bool allows(std::string_view bytes);

  // For trials: `to` = `from` after `byte`, built from scratch nodes valid
  // until release(mark) with a mark taken before them.
  void try_step(const MatchState& from, uint8_t byte, MatchState& to) { step(from, byte, to, false); }
  // For walks over many candidates: as try_step, but the nodes are interned
  // (equal states are equal values, whatever path led to them) until
  // forget(mark) drops them; no release() in between.
  void walk_step(const MatchState& from, uint8_t byte, MatchState& to) { step(from, byte, to, true); }
  void forget(size_t mark);
  // Nodes below `mark` (taken before scratch steps) are committed ones.
  size_t mark() const { return nodes_.size(); }
  // The work of the steps so far, for budgets: stacks read (a step reads
  // every stack of its state, matched or not) and expansions made.
  uint64_t work() const { return work_done_; }
  void release(size_t mark) { nodes_.resize(mark); }

  static constexpr uint32_t kBottom = UINT32_MAX;

 private:
  struct Node {
    uint32_t pos;     // item index: the top's byte set, or where a caller resumes
    uint32_t parent;  // kBottom for the root's frame
  };
  void step(const MatchState& from, uint8_t byte, MatchState& to, bool intern);
  // Adds to `to` every stack that (pos, parent) expands to.
  void expand(uint32_t pos, uint32_t parent, MatchState& to, bool intern);
  uint32_t node(uint32_t pos, uint32_t parent, bool intern);

  std::shared_ptr<const Grammar> grammar_;
  size_t max_stacks_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> interned_;
  MatchState state_;
  // Per step: (pos, parent) pairs expanded, and scratch nodes made.
  std::vector<std::pair<uint32_t, uint32_t>> work_;
  StampedMap seen_;
  StampedMap made_;  // (pos, parent) -> scratch node
  MatchState scratch_a_, scratch_b_;
  uint64_t work_done_ = 0;
};

}  // namespace qinfer::grammar
