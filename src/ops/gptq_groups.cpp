#include "ops/gptq_groups.h"

#include <cstring>
#include <vector>

namespace qinfer {

namespace {

int32_t word_at(const uint8_t* p, int64_t index) {
  int32_t w;
  std::memcpy(&w, p + 4 * index, 4);
  return w;
}

// Field k (of 32/bits) of a packed word.
int32_t field(int32_t word, int64_t k, int bits) {
  return static_cast<int32_t>((static_cast<uint32_t>(word) >> (bits * k)) & ((1u << bits) - 1));
}

}  // namespace

void dequantize_gptq_row(const GptqMatrix& m, int64_t row, float* out) {
  const int64_t per = 32 / m.bits, zero_words = m.rows / per, groups = (m.cols + m.group - 1) / m.group;
  // The row's zero and scale of every group, looked up once.
  std::vector<int32_t> zero(static_cast<size_t>(groups));
  std::vector<float> scale(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    zero[g] = field(word_at(m.qzeros, g * zero_words + row / per), row % per, m.bits) + 1;
    scale[g] = load_as_f32(m.scales, m.scale_type, static_cast<size_t>(g * m.rows + row));
  }
  for (int64_t i = 0; i < m.cols; ++i) {
    const int64_t g = m.g_idx ? word_at(m.g_idx, i) : i / m.group;
    out[i] =
        static_cast<float>(field(word_at(m.qweight, (i / per) * m.rows + row), i % per, m.bits) - zero[g]) * scale[g];
  }
}

}  // namespace qinfer
