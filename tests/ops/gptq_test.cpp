// GPTQ's packed weights (ops/gptq_groups.h) against AutoGPTQ's layout.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops/gptq_groups.h"

using namespace qinfer;

namespace {

std::vector<uint8_t> words(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> bytes(4 * ws.size());
  size_t i = 0;
  for (uint32_t w : ws) std::memcpy(&bytes[4 * i++], &w, 4);
  return bytes;
}

}  // namespace

// AutoGPTQ packs inputs 8j..8j+7 of an output into nibbles 0-7 of word j of
// its column, and stores each zero minus one: a word whose nibble k holds k,
// with stored zero 7 (zero 8) and scale 1, gives inputs 0-7 the weights
// -8..-1. 8-bit codes go 4 to a word, bytes in input order.
TEST(Gptq, CodesRunAlongInputsAndZerosAreStoredMinusOne) {
  const std::vector<uint16_t> scale_one(1, 0x3c00);  // f16 1.0
  {
    const auto qweight = words({0x76543210u}), qzeros = words({0x7u});
    const GptqMatrix m{qweight.data(), qzeros.data(), scale_one.data(), DType::F16, nullptr, 4, 1, 8, 8};
    // (A matrix of one output is not a multiple of 8 outputs; the zero word
    // is read at output 0 all the same.)
    std::vector<float> row(8);
    dequantize_gptq_row(m, 0, row.data());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(row[i], static_cast<float>(i - 8)) << i;
  }
  {
    const auto qweight = words({0x83828180u}), qzeros = words({0x7fu});
    const GptqMatrix m{qweight.data(), qzeros.data(), scale_one.data(), DType::F16, nullptr, 8, 1, 4, 4};
    std::vector<float> row(4);
    dequantize_gptq_row(m, 0, row.data());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(row[i], static_cast<float>(i)) << i;
  }
}

// With g_idx (desc_act), each input takes the zero and scale of the group it
// names, wherever it sits.
TEST(Gptq, GIdxNamesEachInputsGroup) {
  const int64_t rows = 8, cols = 16;
  std::vector<uint8_t> qweight(4 * (cols / 8) * rows, 0x99);  // every code 9
  const auto qzeros = words({0x33333333u, 0x66666666u});      // group 0: zero 4, group 1: zero 7
  std::vector<float> scales(2 * rows);
  for (int64_t r = 0; r < rows; ++r) scales[r] = 1.0f, scales[rows + r] = 0.5f;
  std::vector<uint8_t> g_idx(4 * cols);
  for (int64_t i = 0; i < cols; ++i) {
    const int32_t g = static_cast<int32_t>(i % 2);
    std::memcpy(&g_idx[4 * i], &g, 4);
  }
  const GptqMatrix m{qweight.data(), qzeros.data(), scales.data(), DType::F32, g_idx.data(), 4, rows, cols, 8};
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_gptq_row(m, r, row.data());
    for (int64_t i = 0; i < cols; ++i) EXPECT_EQ(row[i], i % 2 ? (9 - 7) * 0.5f : (9 - 4) * 1.0f) << r << "," << i;
  }
}
