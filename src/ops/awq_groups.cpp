#include "ops/awq_groups.h"

#include <cstring>

namespace qinfer {

namespace {

// The nibble of output k (of eight) in a packed int32.
constexpr int kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};

int32_t code(const uint8_t* packed, int64_t index, int64_t row) {
  uint32_t word;
  std::memcpy(&word, packed + 4 * index, 4);
  return static_cast<int32_t>((word >> (4 * kNibbleOf[row % 8])) & 0xf);
}

}  // namespace

void dequantize_awq_row(const AwqMatrix& m, int64_t row, float* out) {
  const int64_t words = m.rows / 8, word = row / 8;
  for (int64_t g = 0; g < m.cols / m.group; ++g) {
    const int32_t zero = code(m.qzeros, g * words + word, row);
    const float scale = load_as_f32(m.scales, m.scale_type, static_cast<size_t>(g * m.rows + row));
    for (int64_t i = g * m.group; i < (g + 1) * m.group; ++i)
      out[i] = static_cast<float>(code(m.qweight, i * words + word, row) - zero) * scale;
  }
}

}  // namespace qinfer
