#include "runtime/grammar_constraint.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace qinfer {
namespace {

constexpr size_t kCachedMasks = 32;

bool bit(const std::vector<uint64_t>& bits, size_t id) {
  return id / 64 < bits.size() && (bits[id / 64] >> (id % 64) & 1);
}

const OutputGrammar& require_complete(const std::shared_ptr<const OutputGrammar>& spec) {
  if (!spec || !spec->grammar || !spec->tokenizer || !spec->vocabulary)
    fail("constrained decoding: incomplete grammar");
  return *spec;
}

}  // namespace

std::shared_ptr<const OutputGrammar> output_grammar(std::shared_ptr<const grammar::Grammar> grammar,
                                                    const Tokenizer& tokenizer,
                                                    std::shared_ptr<const grammar::TokenTrie> vocabulary,
                                                    ReasoningBlock reasoning, std::string source) {
  auto out = std::make_shared<OutputGrammar>();
  out->grammar = std::move(grammar);
  out->source = std::move(source);
  out->tokenizer = &tokenizer;
  out->vocabulary = std::move(vocabulary);
  if (reasoning != ReasoningBlock::None) {
    out->think_open = tokenizer.token_to_id("<think>").value_or(-1);
    out->think_close = tokenizer.token_to_id("</think>").value_or(-1);
    for (const char* line_break : {"\n\n", "\n"})
      if (const std::vector<int32_t> ids = tokenizer.encode(line_break, false); ids.size() == 1)
        out->separators.push_back(ids[0]);
  }
  out->starts_in_reasoning = reasoning == ReasoningBlock::Open;
  return out;
}

std::shared_ptr<const grammar::TokenTrie> token_trie(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(tokenizer.vocab_size());
  for (size_t id = 0; id < bytes.size(); ++id) {
    const auto t = static_cast<int32_t>(id);
    if (!tokenizer.is_special(t)) bytes[id] = std::string(tokenizer.token_bytes(t));
  }
  return std::make_shared<const grammar::TokenTrie>(bytes);
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const OutputGrammar> spec, std::vector<int32_t> eos_ids)
    : spec_(std::move(spec)),
      tokenizer_(*require_complete(spec_).tokenizer),
      eos_ids_(std::move(eos_ids)),
      matcher_(spec_->grammar),
      phase_(spec_->starts_in_reasoning && spec_->think_close >= 0 ? Phase::Reasoning : Phase::Start) {}

bool GrammarConstraint::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

bool GrammarConstraint::is_separator(int32_t id) const {
  return std::find(spec_->separators.begin(), spec_->separators.end(), id) != spec_->separators.end();
}

bool GrammarConstraint::allows(int32_t id) {
  if (phase_ == Phase::Reasoning) return !is_eos(id);
  if (phase_ == Phase::Start && id == spec_->think_open) return true;
  if (phase_ == Phase::Separator && is_separator(id)) return true;
  if (is_eos(id)) return matcher_.state().accepting;
  if (id < 0 || static_cast<size_t>(id) >= spec_->vocabulary->vocab_size() || tokenizer_.is_special(id)) return false;
  const std::string_view bytes = tokenizer_.token_bytes(id);
  return !bytes.empty() && matcher_.allows(bytes);
}

const std::vector<uint64_t>& GrammarConstraint::answer_mask() {
  const grammar::MatchState& state = matcher_.state();
  for (auto it = cache_.begin(); it != cache_.end(); ++it)
    if (it->first == state) {
      cache_.splice(cache_.begin(), cache_, it);  // most recent first
      return cache_.front().second;
    }
  if (cache_.size() == kCachedMasks) cache_.pop_back();
  cache_.emplace_front(state, std::vector<uint64_t>());
  spec_->vocabulary->allowed(matcher_, cache_.front().second);
  return cache_.front().second;
}

void GrammarConstraint::mask(std::span<float> logits) {
  if (phase_ == Phase::Reasoning) {  // free, but the answer must still come: no eos before </think>
    for (int32_t id : eos_ids_)
      if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] = -std::numeric_limits<float>::infinity();
    return;
  }
  // The few tokens allowed beside the grammar's (eos once it is satisfied,
  // <think> first) are kept aside, so the pass over the vocabulary reads
  // only the mask's bits.
  std::vector<std::pair<int32_t, float>> kept;
  auto keep = [&](int32_t id) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) kept.push_back({id, logits[id]});
  };
  if (matcher_.state().accepting)
    for (int32_t id : eos_ids_) keep(id);
  if (phase_ == Phase::Start) keep(spec_->think_open);
  if (phase_ == Phase::Separator)
    for (int32_t id : spec_->separators) keep(id);
  const std::vector<uint64_t>& allowed = answer_mask();
  for (size_t id = 0; id < logits.size(); ++id)
    if (!bit(allowed, id)) logits[id] = -std::numeric_limits<float>::infinity();
  for (const auto& [id, logit] : kept) logits[id] = logit;
}

void GrammarConstraint::accept(int32_t id) {
  if (phase_ == Phase::Reasoning) {
    if (id == spec_->think_close) phase_ = Phase::Separator;
    return;
  }
  if (phase_ == Phase::Start && id == spec_->think_open) {
    phase_ = Phase::Reasoning;
    return;
  }
  if (phase_ == Phase::Separator && is_separator(id)) {
    phase_ = Phase::Answer;
    return;
  }
  phase_ = Phase::Answer;
  if (is_eos(id)) return;
  if (!matcher_.advance(tokenizer_.token_bytes(id)))
    fail("constrained decoding: token ", id, " does not follow the output's grammar");
}

bool GrammarConstraint::complete() const {
  return phase_ != Phase::Reasoning && eos_ids_.empty() && matcher_.state().accepting &&
         matcher_.state().stacks.empty();
}

}  // namespace qinfer
