#include "engine/draft_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "ops/simd.h"

namespace qinfer::engine {

namespace {

// Whether the greedy id (the lowest on ties, as greedy sampling) has at
// least probability p_min; it goes into `id`. NaN logits draft nothing.
// `scratch`: the softmax's buffer (vectorized: a full pass over the
// vocabulary per draft id).
bool greedy(std::span<const float> logits, float p_min, int32_t& id, std::vector<float>& scratch) {
  const auto top = std::max_element(logits.begin(), logits.end());
  id = static_cast<int32_t>(top - logits.begin());
  if (p_min <= 0) return !std::isnan(*top);
  scratch.assign(logits.begin(), logits.end());
  const simd::SoftmaxStats s = simd::softmax_scaled(scratch.data(), scratch.size(), 1.0f);
  // The top's exp(0) over the sum. Highway's Exp gives 0 for NaN, and an
  // infinite top makes every term NaN or 0: neither drafts.
  return !std::isnan(*top) && std::isfinite(s.max) && s.sum >= 1 && 1 / s.sum >= p_min;
}

}  // namespace

DraftModel::DraftModel(const Qwen3Model& model, const BlockManager& blocks, float p_min, ThreadPool& pool)
    : model_(model),
      blocks_(blocks),
      kv_(model.config().num_hidden_layers, model.config().num_key_value_heads, model.config().head_dim,
          blocks.n_blocks(), blocks.block_size(), model.kv_cache_dtype()),
      block_generation_(static_cast<size_t>(blocks.n_blocks()), 0),
      p_min_(p_min),
      pool_(pool) {}

void DraftModel::run(std::span<DraftJob> jobs, int64_t max_rows) {
  batch_.tokens.clear();
  batch_.seqs.clear();
  drafting_.clear();
  completed_.clear();
  const int64_t bs = blocks_.block_size();
  // Leading blocks it holds whole at their contents' generation (a prompt
  // from the prefix cache) are not computed again.
  for (DraftJob& j : jobs) {
    Sequence& q = *j.seq;
    while (q.draft_computed % bs == 0 && q.draft_computed + bs <= j.end) {
      const int32_t b = q.blocks[static_cast<size_t>(q.draft_computed / bs)];
      if (block_generation_[static_cast<size_t>(b)] != blocks_.generation(b)) break;
      q.draft_computed += bs;
    }
  }
  // Ids [from, end) of the job's sequence; its draft_computed moves once they ran.
  const auto catch_up = [&](const DraftJob& j, int64_t from, int64_t end, BatchSeq::Logits out) {
    Sequence& q = *j.seq;
    batch_.tokens.insert(batch_.tokens.end(), q.ids.begin() + from, q.ids.begin() + end);
    batch_.seqs.push_back({end - from, from, q.blocks, out, -1});
    for (int64_t p = from / bs * bs; p + bs <= end; p += bs)  // blocks it completes ([0, from) ran before)
      completed_.push_back(q.blocks[static_cast<size_t>(p / bs)]);
    caught_up_.push_back({&q, end});
  };
  caught_up_.clear();
  for (DraftJob& j : jobs)
    if (j.drafts > 0) {  // its last id again where it has them all (a step that failed after this ran)
      catch_up(j, std::min(j.seq->draft_computed, j.end - 1), j.end, BatchSeq::Logits::Last);
      drafting_.push_back(&j);
    }
  for (const DraftJob& j : jobs) {
    if (j.drafts > 0 || max_rows <= 0 || j.end <= j.seq->draft_computed) continue;
    const int64_t end = std::min(j.end, j.seq->draft_computed + max_rows);
    max_rows -= end - j.seq->draft_computed;
    catch_up(j, j.seq->draft_computed, end, BatchSeq::Logits::None);
  }
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  for (int64_t d = 0; !batch_.seqs.empty(); ++d) {
    const std::span<const float> logits = forward(model_, batch_, kv_, state_, pool_);
    rows_ += static_cast<int64_t>(batch_.tokens.size());
    ++passes_;
    for (int32_t b : completed_) block_generation_[static_cast<size_t>(b)] = blocks_.generation(b);
    completed_.clear();
    for (auto [seq, end] : caught_up_) seq->draft_computed = end;
    caught_up_.clear();
    for (size_t i = 0; i < drafting_.size(); ++i) {
      DraftJob& j = *drafting_[i];
      int32_t id;
      if (!greedy(logits.subspan(i * V, V), p_min_, id, probs_)) {
        j.drafts = d;
        j.seq->draft.resize(static_cast<size_t>(d));
      } else {
        j.seq->draft[static_cast<size_t>(d)] = id;
      }
    }
    std::erase_if(drafting_, [&](const DraftJob* j) { return j->drafts <= d + 1; });
    batch_.tokens.clear();
    batch_.seqs.clear();
    for (const DraftJob* j : drafting_) {  // its draft id d at its position, for the next
      batch_.tokens.push_back(j->seq->draft[static_cast<size_t>(d)]);
      batch_.seqs.push_back({1, j->end + d, j->seq->blocks, BatchSeq::Logits::Last, -1});
    }
  }
}

}  // namespace qinfer::engine
