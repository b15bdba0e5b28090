// One step of the batching engine as the model sees it: the rows of several
// sequences, each with its own positions and its own KV block table (a
// sequence's rows are consecutive; the forward pass treats every row alike
// except where it touches positions and the KV cache).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace qinfer {

struct BatchSeq {
  int64_t n = 0;                    // rows of this sequence in the step
  int64_t pos0 = 0;                 // position of its first row; its blocks already hold [0, pos0)
  std::span<const int32_t> blocks;  // the KV block table, covering [0, pos0 + n)
  // What the step gives for it: nothing, the last row's logits, every row's,
  // or the last row's final hidden state (after the final norm: what an
  // embedding model pools) instead of logits.
  enum class Logits : uint8_t { None, Last, All, Hidden } logits = Logits::Last;
  // The named LoRA adapter its rows take (an index into
  // Qwen3Model::adapter_names()), beside those every row takes; -1: none.
  int32_t adapter = -1;
};

struct Batch {
  std::vector<int32_t> tokens;  // all rows, sequence after sequence
  std::vector<BatchSeq> seqs;
};

}  // namespace qinfer
