#include "text/grammar/matcher.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::grammar {
namespace {

uint64_t key(uint32_t pos, uint32_t parent) { return uint64_t{pos} << 32 | parent; }

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, size_t max_stacks)
    : grammar_(std::move(grammar)), max_stacks_(max_stacks) {
  if (!grammar_ || grammar_->root >= grammar_->rule_alts.size()) fail("grammar matcher: no grammar");
  work_.clear();
  seen_.clear();
  for (uint32_t alt : grammar_->rule_alts[grammar_->root]) expand(alt, kBottom, state_, true);
  std::sort(state_.stacks.begin(), state_.stacks.end());
}

uint32_t Matcher::node(uint32_t pos, uint32_t parent, bool intern) {
  const uint64_t k = key(pos, parent);
  if (intern) {
    auto [it, added] = interned_.try_emplace(k, static_cast<uint32_t>(nodes_.size()));
    if (added) nodes_.push_back({pos, parent});
    return it->second;
  }
  // A committed node with these contents is reused, so that a trial step
  // that returns to a committed state gives its very value.
  if (auto it = interned_.find(k); it != interned_.end()) return it->second;
  const auto [id, made] = made_.find_or_insert(k, static_cast<uint32_t>(nodes_.size()));
  if (made) nodes_.push_back({pos, parent});
  return id;
}

void Matcher::expand(uint32_t pos, uint32_t parent, MatchState& to, bool intern) {
  const Grammar& g = *grammar_;
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    const auto [p, par] = work_.back();
    work_.pop_back();
    if (!seen_.find_or_insert(key(p, par), 0).second) continue;
    ++work_done_;
    const Item& it = g.items[p];
    switch (it.kind) {
      case Item::Kind::End:
        if (par == kBottom)
          to.accepting = true;
        else
          work_.push_back({nodes_[par].pos, nodes_[par].parent});
        break;
      case Item::Kind::Rule: {
        // A call in tail position returns straight to the caller's caller,
        // so that repetitions (tail ::= item tail | "") do not deepen the stack.
        const uint32_t resume = g.items[p + 1].kind == Item::Kind::End ? par : node(p + 1, par, intern);
        const auto& alts = g.rule_alts[it.arg];
        for (auto a = alts.rbegin(); a != alts.rend(); ++a) work_.push_back({*a, resume});
        break;
      }
      case Item::Kind::Bytes:  // (p, par) is new in this step: so is the frame
        if (to.stacks.size() == max_stacks_)
          fail("grammar: more than ", max_stacks_, " ways to continue at once (the grammar is too ambiguous)");
        to.stacks.push_back({p, par});
        break;
    }
  }
}

void Matcher::step(const MatchState& from, uint8_t byte, MatchState& to, bool intern) {
  const Grammar& g = *grammar_;
  to.stacks.clear();
  to.accepting = false;
  seen_.clear();
  made_.clear();
  work_done_ += from.stacks.size();
  for (const Frame& f : from.stacks)
    if (g.sets[g.items[f.pos].arg].test(byte)) expand(f.pos + 1, f.parent, to, intern);
}

void Matcher::forget(size_t mark) {
  for (size_t id = mark; id < nodes_.size(); ++id) interned_.erase(key(nodes_[id].pos, nodes_[id].parent));
  nodes_.resize(mark);
}

bool Matcher::advance(std::string_view bytes) {
  MatchState* from = &state_;
  for (char c : bytes) {
    MatchState& to = from == &scratch_a_ ? scratch_b_ : scratch_a_;
    step(*from, static_cast<uint8_t>(c), to, true);
    if (to.dead()) return false;
    from = &to;
  }
  if (from != &state_) {
    std::sort(from->stacks.begin(), from->stacks.end());
    state_ = *from;
  }
  return true;
}

bool Matcher::allows(std::string_view bytes) {
  const size_t before = mark();
  MatchState* from = &state_;
  bool ok = true;
  for (char c : bytes) {
    MatchState& to = from == &scratch_a_ ? scratch_b_ : scratch_a_;
    step(*from, static_cast<uint8_t>(c), to, false);
    if (to.dead()) {
      ok = false;
      break;
    }
    from = &to;
  }
  release(before);
  return ok;
}

}  // namespace qinfer::grammar
