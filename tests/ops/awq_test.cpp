// AWQ's packed 4-bit weights (ops/awq_groups.h) against AutoAWQ's layout.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops/awq_groups.h"

using namespace qinfer;

namespace {

void put_word(std::vector<uint8_t>& bytes, size_t index, uint32_t word) { std::memcpy(&bytes[4 * index], &word, 4); }

}  // namespace

// AutoAWQ packs outputs 0, 2, 4, 6, 1, 3, 5, 7 into nibbles 0-7: a word whose
// nibble i holds i gives outputs 0-7 the codes 0, 4, 1, 5, 2, 6, 3, 7.
TEST(Awq, NibblesHoldOutputsInAutoAwqsOrder) {
  std::vector<uint8_t> qweight(4), qzeros(4);
  put_word(qweight, 0, 0x76543210u);
  put_word(qzeros, 0, 0);
  const std::vector<uint16_t> scales(8, 0x3c00);  // f16 1.0
  const AwqMatrix m{qweight.data(), qzeros.data(), scales.data(), DType::F16, 8, 1, 1};
  const float want[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int64_t r = 0; r < 8; ++r) {
    float w;
    dequantize_awq_row(m, r, &w);
    EXPECT_EQ(w, want[r]) << "output " << r;
  }
}

// A weight is (code - zero of its group) x scale of its group and output.
TEST(Awq, WeightsAreCodeMinusZeroTimesScaleOfTheirGroup) {
  const int64_t rows = 16, cols = 6, group = 3, words = rows / 8, groups = cols / group;
  auto code_of = [](int64_t i, int64_t r) { return static_cast<uint32_t>((i * 7 + r * 3) % 16); };
  auto zero_of = [](int64_t g, int64_t r) { return static_cast<uint32_t>((g * 5 + r) % 16); };
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // AutoAWQ's pack order
  std::vector<uint8_t> qweight(4 * cols * words), qzeros(4 * groups * words);
  for (int64_t w = 0; w < words; ++w) {
    for (int64_t i = 0; i < cols; ++i) {
      uint32_t word = 0;
      for (int n = 0; n < 8; ++n) word |= code_of(i, 8 * w + order[n]) << (4 * n);
      put_word(qweight, i * words + w, word);
    }
    for (int64_t g = 0; g < groups; ++g) {
      uint32_t word = 0;
      for (int n = 0; n < 8; ++n) word |= zero_of(g, 8 * w + order[n]) << (4 * n);
      put_word(qzeros, g * words + w, word);
    }
  }
  std::vector<float> scales(groups * rows);
  for (size_t k = 0; k < scales.size(); ++k) scales[k] = 0.01f * static_cast<float>(k + 1);
  const AwqMatrix m{qweight.data(), qzeros.data(), scales.data(), DType::F32, rows, cols, group};
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_awq_row(m, r, row.data());
    for (int64_t i = 0; i < cols; ++i) {
      const float want =
          static_cast<float>(static_cast<int32_t>(code_of(i, r)) - static_cast<int32_t>(zero_of(i / group, r))) *
          scales[(i / group) * rows + r];
      ASSERT_EQ(row[i], want) << r << "," << i;
    }
  }
}
