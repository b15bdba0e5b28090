// The reference an embedding is checked against: a prompt's last final hidden
// state (BatchSeq::Logits::Hidden), computed alone in a cache of its own.
#pragma once
#include <cstdint>
#include <vector>

#include "model/qwen3.h"

namespace qinfer::test {

inline std::vector<float> hidden_alone(const Qwen3Model& model, const std::vector<int32_t>& prompt, ThreadPool& pool) {
  KvCache cache = model.make_cache();
  cache.ensure(static_cast<int64_t>(prompt.size()));
  ForwardState st;
  Batch b{prompt, {{static_cast<int64_t>(prompt.size()), 0, cache.table(), BatchSeq::Logits::Hidden}}};
  forward(model, b, cache.pool(), st, pool);
  return st.hidden;
}

}  // namespace qinfer::test
