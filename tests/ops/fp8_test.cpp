// FP8 E4M3 codes and their block scales (ops/fp8_blocks.h, util/dtype.h)
// against the format's definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/fp8_blocks.h"
#include "util/dtype.h"

using namespace qinfer;

namespace {

// The OCP E4M3 value of a code, by definition, in double.
double e4m3_value(uint8_t c) {
  const int exp = (c >> 3) & 0xf, mant = c & 7;
  const double magnitude = exp == 0 ? std::ldexp(mant / 8.0, -6) : std::ldexp(1 + mant / 8.0, exp - 7);
  return (c & 0x80) ? -magnitude : magnitude;
}

bool is_nan_code(uint8_t c) { return (c & 0x7f) == 0x7f; }

}  // namespace

TEST(Fp8, EveryCodeWidensToItsValue) {
  for (int i = 0; i < 256; ++i) {
    const uint8_t c = static_cast<uint8_t>(i);
    const float got = f8e4m3_to_f32(c);
    if (is_nan_code(c)) {
      EXPECT_TRUE(std::isnan(got)) << i;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), e4m3_value(c)) << i;
    EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << i;
  }
  EXPECT_EQ(f8e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(f8e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_EQ(f8e4m3_to_f32(0xb8), -1.0f);
}

TEST(Fp8, NarrowingRoundsToNearestEvenAndSaturates) {
  for (int i = 0; i < 256; ++i) {
    const uint8_t c = static_cast<uint8_t>(i);
    if (is_nan_code(c)) continue;
    EXPECT_EQ(f32_to_f8e4m3(f8e4m3_to_f32(c)), c) << i;
  }
  // Between each pair of neighbouring positive codes: the midpoint goes to the
  // even code, a hair either side to the nearer one.
  for (uint8_t c = 0; c < 0x7e; ++c) {
    const double lo = e4m3_value(c), hi = e4m3_value(static_cast<uint8_t>(c + 1)), mid = (lo + hi) / 2;
    const uint8_t even = (c & 1) ? static_cast<uint8_t>(c + 1) : c;
    EXPECT_EQ(f32_to_f8e4m3(static_cast<float>(mid)), even) << "between codes " << int(c) << " and " << c + 1;
    EXPECT_EQ(f32_to_f8e4m3(std::nextafter(static_cast<float>(mid), 0.0f)), c) << int(c);
    EXPECT_EQ(f32_to_f8e4m3(std::nextafter(static_cast<float>(mid), 1e9f)), c + 1) << int(c);
    EXPECT_EQ(f32_to_f8e4m3(-static_cast<float>(mid)), even | 0x80) << int(c);
  }
  for (float big : {448.0f, 464.0f, 500.0f, 1e30f, INFINITY}) {
    EXPECT_EQ(f32_to_f8e4m3(big), 0x7e) << big;
    EXPECT_EQ(f32_to_f8e4m3(-big), 0xfe) << big;
  }
  EXPECT_EQ(f32_to_f8e4m3(0x1p-11f), 0x00);  // below half the smallest subnormal
  EXPECT_EQ(f32_to_f8e4m3(-0.0f), 0x80);
  EXPECT_TRUE(is_nan_code(f32_to_f8e4m3(NAN)));
}

// Each weight is its code times the scale of its block, one f32 product, for
// partial blocks at both edges and every scale type.
TEST(Fp8, RowsDequantizeWithTheScaleOfTheirBlock) {
  const int64_t rows = 5, cols = 300, block_rows = 2, block_cols = 128, scale_rows = 3, scale_cols = 3;
  std::vector<uint8_t> codes(rows * cols);
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    if (is_nan_code(codes[i])) codes[i] = 0x3c;
  }
  std::vector<float> scale_values(scale_rows * scale_cols);
  for (size_t i = 0; i < scale_values.size(); ++i)
    scale_values[i] = std::ldexp(1.0f + 0.0625f * i, -static_cast<int>(i));
  for (DType type : {DType::F32, DType::BF16, DType::F16}) {
    std::vector<uint8_t> stored(scale_values.size() * dtype_size(type));
    for (size_t i = 0; i < scale_values.size(); ++i) {
      if (type == DType::F32) {
        std::memcpy(&stored[4 * i], &scale_values[i], 4);
      } else {
        const uint16_t h = type == DType::BF16 ? f32_to_bf16(scale_values[i]) : f32_to_f16(scale_values[i]);
        std::memcpy(&stored[2 * i], &h, 2);
      }
    }
    const Fp8BlockScales scales{stored.data(), type, block_rows, block_cols};
    EXPECT_EQ(fp8_scale_columns(cols, scales), scale_cols);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_fp8_row(codes.data(), r, cols, scales, row.data());
      for (int64_t c = 0; c < cols; ++c) {
        const float scale = load_as_f32(stored.data(), type, (r / block_rows) * scale_cols + c / block_cols);
        ASSERT_EQ(row[c], f8e4m3_to_f32(codes[r * cols + c]) * scale) << dtype_name(type) << " " << r << "," << c;
      }
    }
  }
}
