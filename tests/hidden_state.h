// The references an embedding and a score are checked against: a prompt's
// last final hidden state (BatchSeq::Logits::Hidden) or logits, computed
// alone in a cache of its own.
#pragma once
#include <cstdint>
#include <vector>

#include "model/qwen3.h"

namespace qinfer::test {

inline std::vector<float> last_position_alone(const Qwen3Model& model, const std::vector<int32_t>& prompt,
                                              ThreadPool& pool, BatchSeq::Logits out) {
  KvCache cache = model.make_cache();
  cache.ensure(static_cast<int64_t>(prompt.size()));
  ForwardState st;
  Batch b{prompt, {{static_cast<int64_t>(prompt.size()), 0, cache.table(), out}}};
  const std::span<const float> logits = forward(model, b, cache.pool(), st, pool);
  return out == BatchSeq::Logits::Hidden ? st.hidden : std::vector<float>(logits.begin(), logits.end());
}

inline std::vector<float> hidden_alone(const Qwen3Model& model, const std::vector<int32_t>& prompt, ThreadPool& pool) {
  return last_position_alone(model, prompt, pool, BatchSeq::Logits::Hidden);
}

inline std::vector<float> logits_alone(const Qwen3Model& model, const std::vector<int32_t>& prompt, ThreadPool& pool) {
  return last_position_alone(model, prompt, pool, BatchSeq::Logits::Last);
}

}  // namespace qinfer::test
