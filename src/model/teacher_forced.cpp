// teacher_forced_logits (qwen3.h). A file of its own: inlined next to
// forward(), GCC 12 warns about the decode path's one-token spans.
#include <vector>

#include "model/qwen3.h"

namespace qinfer {

std::vector<float> teacher_forced_logits(const Qwen3Model& model, std::span<const int32_t> seq, bool decode,
                                         ThreadPool& pool) {
  KvCache cache = model.make_cache();
  ForwardState state;
  if (!decode) {
    auto logits = forward(model, seq, 0, cache, state, pool, true);
    return {logits.begin(), logits.end()};
  }
  std::vector<float> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    auto logits = forward(model, std::span(&seq[i], 1), static_cast<int64_t>(i), cache, state, pool);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

}  // namespace qinfer
