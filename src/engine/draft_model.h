// Speculative decoding's drafts by a smaller model of the same vocabulary (a
// Qwen3-0.6B for a Qwen3-32B: llama.cpp's --model-draft, vLLM's draft model).
// It keeps the keys/values of each sequence's ids in a pool of its own that
// shares the engine's block tables, so a position lives in the same block in
// both, and runs after the step is scheduled: into the blocks reserved for the
// rows that verify its draft. First one varlen pass catches it up on the ids
// it has not seen (a prompt chunk the step prefills, the ids a step
// confirmed), giving each drafting sequence its first draft id; then one pass
// per further id, a row per sequence still drafting. A full block it computed
// stays valid for as long as the block's contents do (its generation), so a
// prompt from the prefix cache skips the blocks it already holds. Drafts are
// greedy: the draws that verify them decide what is kept, so they change no
// output. A draft ends at an id the draft model gives less than a
// probability p_min (llama.cpp's --draft-p-min): where it is unsure it is
// mostly wrong, and a rejected id costs a row and the passes after it.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/block_manager.h"
#include "engine/sequence.h"
#include "model/qwen3.h"

namespace qinfer::engine {

struct DraftJob {
  Sequence* seq;
  int64_t end;  // ids [seq->draft_computed, end) are caught up (the step computes them in the target too)
  // Draft ids to put in seq->draft (0: catching up only), whose end must
  // then be seq->ids.size(); run() leaves those it drafted, and seq->draft
  // as long.
  int64_t drafts;
};

class DraftModel {
 public:
  // A pool of as many blocks as `blocks` manages, of its block size.
  DraftModel(const Qwen3Model& model, const BlockManager& blocks, float p_min, ThreadPool& pool);

  // Runs the jobs: every drafting one is caught up whole and gets its drafts;
  // the others catch up at most `max_rows` rows between them (the rest in
  // later steps). A drafting job's positions past its ids are overwritten
  // later: its draft_computed ends at its ids.
  void run(std::span<DraftJob> jobs, int64_t max_rows);
  // Rows its passes ran so far, and the passes.
  int64_t rows() const { return rows_; }
  int64_t passes() const { return passes_; }

 private:
  const Qwen3Model& model_;
  const BlockManager& blocks_;
  KvPool kv_;
  std::vector<uint64_t> block_generation_;  // per block: the generation whose contents it holds whole (0: none)
  float p_min_;
  ThreadPool& pool_;
  ForwardState state_;
  Batch batch_;
  std::vector<DraftJob*> drafting_;  // the jobs whose logits the last pass gave, in order
  int64_t rows_ = 0, passes_ = 0;
  std::vector<float> probs_;                              // a draft id's softmax
  std::vector<int32_t> completed_;                        // the blocks the catch-up pass fills whole
  std::vector<std::pair<Sequence*, int64_t>> caught_up_;  // the draft_computed its catch-up pass gives each
};

}  // namespace qinfer::engine
