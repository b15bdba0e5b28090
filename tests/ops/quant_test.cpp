// Q8/Q4 block formats: quantize -> dequantize error bounds, the half-precision
// rounding of the scales, and the quantized matmul kernels against scalar
// references (integer block dot products with the activation quantized per
// block, in decode and prefill alike).
#include "ops/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "amx_emulator.h"
#include "each_target.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "test_util.h"

using namespace qinfer;

namespace {

using test::randn;

// Rows of `values` ([rows, cols]) quantized, as a matrix with its storage.
struct QuantMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
  QuantMatrix(WeightFormat f, const std::vector<float>& values, int64_t rows, int64_t cols) {
    w = WeightMatrix{f, nullptr, rows, cols};
    bytes.resize(w.bytes());
    quantize_matrix(w.quant_format(), values.data(), rows, cols, bytes.data());
    w.data = bytes.data();
  }
  float scale(int64_t r, int64_t b) const {
    return f16_to_f32(quant_block_scale(w.quant_format(), bytes.data(), r, b, w.cols));
  }
};

const char* name(WeightFormat f) { return weight_format_name(f); }

// The activation quantization the decode kernels use, written plainly.
void quantize_activation_ref(const float* x, int64_t k, std::vector<int>& q, std::vector<double>& d) {
  q.assign(k, 0);
  d.assign(k / kQuantBlock, 0);
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    float amax = 0;
    for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(x[b * kQuantBlock + i]));
    d[b] = amax / 127.0f;
    for (int i = 0; i < kQuantBlock; ++i)
      q[b * kQuantBlock + i] =
          amax > 0 ? static_cast<int>(std::nearbyint(x[b * kQuantBlock + i] * (127.0f / amax))) : 0;
  }
}

// Decode reference: per block, the exact integer dot product of the weight
// codes and the quantized activation, scaled by both scales, summed in double.
double quantized_dot_ref(const WeightMatrix& w, int64_t r, const std::vector<int>& q, const std::vector<double>& d) {
  std::vector<float> deq(w.cols);
  const auto* data = static_cast<const uint8_t*>(w.data);
  dequantize_row(w.quant_format(), data, r, w.cols, deq.data());
  double total = 0;
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const double dw = f16_to_f32(quant_block_scale(w.quant_format(), data, r, b, w.cols));
    int64_t isum = 0;
    for (int i = 0; i < kQuantBlock; ++i) {
      const int64_t c = b * kQuantBlock + i;
      const int64_t code = dw != 0 ? std::llround(deq[c] / dw) : 0;  // the stored integer (q, or q - 8)
      isum += code * q[c];
    }
    total += dw * d[b] * static_cast<double>(isum);
  }
  return total;
}

// got [n, w.rows] = x [n, w.cols] times w, against the integer reference
// row by row (each activation row quantized on its own); names the first
// output that differs.
::testing::AssertionResult matches_integer_reference(const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                                                     const std::vector<float>& got) {
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int> q;
    std::vector<double> d;
    quantize_activation_ref(&x[i * w.cols], w.cols, q, d);
    for (int64_t r = 0; r < w.rows; ++r) {
      const double want = quantized_dot_ref(w, r, q, d), have = got[i * w.rows + r];
      if (std::fabs(have - want) > 1e-5 * (1 + std::fabs(want)))
        return ::testing::AssertionFailure()
               << "activation row " << i << ", output " << r << ": " << have << " against " << want;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Quant, F16RoundingMatchesTheCompiler) {
#ifndef QINFER_TEST_NATIVE_F16
  GTEST_SKIP() << "this compiler has no half-precision type for this target to compare with";
#else
  std::mt19937 rng(5);
  std::vector<float> values = {0.0f,     -0.0f,   1.0f,       65504.0f, 65519.0f, 65520.0f,  1e-8f, 5.96e-8f,
                               2.98e-8f, 6.1e-5f, 6.1035e-5f, -3.0e-7f, INFINITY, -INFINITY, 1e30f};
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) values.push_back(f);
  }
  for (int e = -30; e <= 16; ++e)
    for (int i = 0; i < 2000; ++i) values.push_back(std::ldexp(1.0f + i / 2000.0f, e) * (i % 2 ? -1 : 1));
  for (float f : values) {
    const QINFER_TEST_NATIVE_F16 native = static_cast<QINFER_TEST_NATIVE_F16>(f);
    uint16_t want;
    std::memcpy(&want, &native, 2);
    ASSERT_EQ(f32_to_f16(f), want) << f;
  }
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
#endif
}

TEST(Quant, DequantizeErrorWithinHalfAStepPerBlock) {
  const int64_t rows = 11;  // a whole Q4 group of 8 and a padded one
  for (WeightFormat f : {WeightFormat::Q8, WeightFormat::Q4})
    for (int64_t cols : {32, 64, 96, 1024}) {
      // Normal values; in row 0 a block of zeros, a constant block, a block with one outlier.
      auto x = randn(rows * cols, 17 + cols, 0.05f);
      std::fill(x.begin(), x.begin() + 32, 0.0f);
      if (cols >= 64) std::fill(x.begin() + 32, x.begin() + 64, -0.25f);
      if (cols >= 96) x[70] = 3.0f;
      const QuantMatrix m(f, x, rows, cols);
      // Both formats pad the rows to a whole number of groups of 8.
      EXPECT_EQ(m.w.bytes(), 16 * ((f == WeightFormat::Q8 ? cols : cols / 2) + cols / 32 * 2));
      std::vector<float> back(cols);
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(m.w.quant_format(), m.bytes.data(), r, cols, back.data());
        const float* xr = &x[r * cols];
        for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
          const float d = std::fabs(m.scale(r, b));
          float amax = 0;
          for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(xr[b * kQuantBlock + i]));
          // The scale is the block's range over the code range, rounded to half precision.
          EXPECT_NEAR(d, amax / (f == WeightFormat::Q8 ? 127.0f : 8.0f), amax * 1e-3f + 1e-12f);
          for (int i = 0; i < kQuantBlock; ++i) {
            const int64_t c = b * kQuantBlock + i;
            const float err = std::fabs(back[c] - xr[c]);
            // Q4 clamps a value opposite to the extreme from code +8 to +7: one step.
            const bool clamped = f == WeightFormat::Q4 && std::fabs(xr[c]) > 7.5f * d;
            ASSERT_LE(err, (clamped ? 1.0f : 0.5f) * d * (1 + 1e-3f) + 1e-12f)
                << name(f) << " cols=" << cols << " row " << r << " at " << c << ": " << xr[c] << " -> " << back[c]
                << ", d=" << d;
          }
        }
      }
    }
}

// The vectorized quantize_row against the scalar definition, on every
// target: blocks whose half scale underflows or overflows, ties in magnitude
// of either sign first, values halfway between two codes, zeros of either
// sign, f32 subnormals and non-finite values.
TEST(Quant, RowKernelWritesTheReferenceBytesOnEveryTarget) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> blocks;
  for (float scale : {1e-9f, 1e-6f, 0.05f, 1.0f, 3e4f, 1e7f, 3e38f}) {
    const auto r = randn(4 * kQuantBlock, 5, scale);
    for (int b = 0; b < 4; ++b) blocks.emplace_back(r.begin() + b * kQuantBlock, r.begin() + (b + 1) * kQuantBlock);
  }
  auto block = [](std::initializer_list<std::pair<int, float>> set, float rest) {
    std::vector<float> v(kQuantBlock, rest);
    for (auto [i, x] : set) v[i] = x;
    return v;
  };
  blocks.push_back(block({}, 0.0f));
  blocks.push_back(block({}, -0.0f));
  blocks.push_back(block({}, -0.25f));
  blocks.push_back(block({{3, -2.0f}, {20, 2.0f}}, 0.1f));   // a tie, the negative first
  blocks.push_back(block({{3, 2.0f}, {20, -2.0f}}, 0.1f));   // the positive first
  blocks.push_back(block({{31, -8.0f}, {30, 8.0f}}, 0.3f));  // ... in the last vector
  blocks.push_back(block({{0, 1e-40f}, {9, -3e-45f}}, 0.0f));
  std::vector<float> halves;  // with d = 1 (Q8: max 127; Q4: m = -8): k + 1/2 rounds to even
  for (int i = 0; i < kQuantBlock; ++i) halves.push_back(static_cast<float>(i - 16) + 0.5f);
  halves[0] = 127.0f;
  blocks.push_back(halves);
  halves[0] = -8.0f;
  blocks.push_back(halves);
  for (float bad : {nan, inf, -inf}) {
    blocks.push_back(block({{5, bad}}, 0.5f));
    blocks.push_back(block({{5, bad}, {6, -3.0f}}, 0.5f));
  }
  std::vector<float> row;
  for (const auto& b : blocks) row.insert(row.end(), b.begin(), b.end());
  const int64_t n = static_cast<int64_t>(row.size()), nb = n / kQuantBlock;
  for (QuantFormat f : {QuantFormat::Q8, QuantFormat::Q4}) {
    std::vector<uint8_t> want(n), got;
    std::vector<uint16_t> want_scales(nb), got_scales;
    quantize_row_reference(f, row.data(), n, want.data(), want_scales.data());
    const int64_t finite = 24 * kQuantBlock;  // the random blocks up to 1e7 (3e38 overflows)
    test::for_each_target([&] {
      got.assign(n, 0);
      got_scales.assign(nb, 1);
      EXPECT_TRUE(quantize_row(f, row.data(), finite, got.data(), got_scales.data()));
      EXPECT_FALSE(quantize_row(f, row.data(), n, got.data(), got_scales.data())) << "a NaN or infinity is reported";
      for (int64_t b = 0; b < nb; ++b) {
        ASSERT_EQ(got_scales[b], want_scales[b]) << (f == QuantFormat::Q8 ? "Q8" : "Q4") << " block " << b;
        for (int64_t i = b * kQuantBlock; i < (b + 1) * kQuantBlock; ++i)
          ASSERT_EQ(got[i], want[i]) << (f == QuantFormat::Q8 ? "Q8" : "Q4") << " block " << b << " weight " << i
                                     << " = " << row[i];
      }
    });
  }
}

// quantize_matrix names the first row with a NaN or infinity; the others
// are quantized as they would be alone.
TEST(Quant, MatrixReportsItsFirstNonFiniteRow) {
  const int64_t rows = 11, cols = 96;
  auto x = randn(rows * cols, 3, 0.1f);
  std::vector<uint8_t> m(quant_matrix_bytes(QuantFormat::Q8, rows, cols)), alone(m.size());
  EXPECT_EQ(quantize_matrix(QuantFormat::Q8, x.data(), rows, cols, alone.data()), -1);
  x[9 * cols + 95] = std::numeric_limits<float>::infinity();
  x[5 * cols + 40] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(quantize_matrix(QuantFormat::Q8, x.data(), rows, cols, m.data()), 5);
  std::vector<float> a(cols), b(cols);
  for (int64_t r : {0, 4, 6, 10}) {
    dequantize_row(QuantFormat::Q8, m.data(), r, cols, a.data());
    dequantize_row(QuantFormat::Q8, alone.data(), r, cols, b.data());
    EXPECT_EQ(a, b) << "row " << r;
  }
}

// The Q4 layout of quant.h, byte for byte: weights (i + r) % 16 - 8 in units
// of 0.5 give code (i + r) % 16 at weight i of row r, and scale 0.5.
TEST(Quant, Q4GroupLayout) {
  const int64_t rows = 9, cols = 64;
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) x[r * cols + i] = 0.5f * static_cast<float>((i + r) % 16 - 8);
  std::vector<uint8_t> m(quant_matrix_bytes(QuantFormat::Q4, rows, cols));
  ASSERT_EQ(m.size(), 2 * 2 * kQ4BlockBytes);  // 2 groups (the second padded) x 2 blocks
  quantize_matrix(QuantFormat::Q4, x.data(), rows, cols, m.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < 2; ++b) {
      const uint8_t* block = &m[(r / 8 * 2 + b) * kQ4BlockBytes];
      EXPECT_EQ(block[2 * (r % 8)] | block[2 * (r % 8) + 1] << 8, f32_to_f16(0.5f));
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 4; ++i) {
          const int64_t w = b * 32 + 8 * c + i;
          EXPECT_EQ(block[16 + 32 * c + 4 * (r % 8) + i], (w + r) % 16 | (w + 4 + r) % 16 << 4)
              << "row " << r << " weight " << w;
        }
    }
  // The padding rows of the last group are zeros with scale 0.
  const uint8_t* last = &m[3 * kQ4BlockBytes];
  EXPECT_EQ(last[2 * 7] | last[2 * 7 + 1] << 8, 0);
  EXPECT_EQ(last[16 + 4 * 7], 8 | 8 << 4);
}

// The Q8 layout of quant.h, byte for byte: weight i of row r is 0.5 * v with
// v = (7i + 3r) % 255 - 127 (127 at the start of each block, so every scale
// is 0.5), stored as the code v + 128 in chunk (i % 32) / 4 at 4 (r % 8) + i % 4.
TEST(Quant, Q8GroupLayout) {
  const int64_t rows = 9, cols = 64;
  auto v = [](int64_t r, int64_t i) { return i % 32 == 0 ? 127 : static_cast<int>((7 * i + 3 * r) % 255) - 127; };
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) x[r * cols + i] = 0.5f * static_cast<float>(v(r, i));
  std::vector<uint8_t> m(quant_matrix_bytes(QuantFormat::Q8, rows, cols));
  ASSERT_EQ(m.size(), 2 * 2 * kQ8BlockBytes);  // 2 groups (the second padded) x 2 blocks
  quantize_matrix(QuantFormat::Q8, x.data(), rows, cols, m.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < 2; ++b) {
      const uint8_t* block = &m[(r / 8 * 2 + b) * kQ8BlockBytes];
      EXPECT_EQ(block[2 * (r % 8)] | block[2 * (r % 8) + 1] << 8, f32_to_f16(0.5f));
      for (int64_t i = b * 32; i < b * 32 + 32; ++i)
        EXPECT_EQ(block[16 + 32 * (i % 32 / 4) + 4 * (r % 8) + i % 4], v(r, i) + 128) << "row " << r << " weight " << i;
    }
  // The padding rows of the last group are zeros (code 128) with scale 0.
  const uint8_t* last = &m[3 * kQ8BlockBytes];
  EXPECT_EQ(last[2 * 7] | last[2 * 7 + 1] << 8, 0);
  EXPECT_EQ(last[16 + 4 * 7], 128);
}

class QuantMatmulTest : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(QuantMatmulTest, DecodeMatchesIntegerReference) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const WeightFormat f = GetParam();
    for (int64_t rows : {1, 3, 5, 67, 130})
      for (int64_t cols : {32, 96, 160, 1024}) {
        const QuantMatrix m(f, randn(rows * cols, rows * 7 + cols, 0.05f), rows, cols);
        auto x = randn(cols, 3 + cols);
        x[0] = 0;  // a zero in the activation (Q8 moves its sign onto the weights)
        std::vector<float> got(rows);
        matmul(x.data(), 1, m.w, got.data(), pool);
        ASSERT_TRUE(matches_integer_reference(m.w, x, 1, got)) << name(f) << " rows=" << rows << " cols=" << cols;
      }
  });
}

// Prefill (many activation rows) runs the same integer arithmetic as decode,
// each row quantized on its own.
TEST_P(QuantMatmulTest, PrefillMatchesIntegerReference) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const WeightFormat f = GetParam();
    for (int64_t n : {2, 3, 7, 9, 17})
      for (int64_t rows : {1, 5, 67})
        for (int64_t cols : {32, 96, 160}) {
          const QuantMatrix m(f, randn(rows * cols, rows * 5 + cols, 0.05f), rows, cols);
          const auto x = randn(n * cols, 9 + n);
          std::vector<float> got(n * rows);
          matmul(x.data(), n, m.w, got.data(), pool);
          ASSERT_TRUE(matches_integer_reference(m.w, x, n, got))
              << name(f) << " n=" << n << " rows=" << rows << " cols=" << cols;
        }
  });
}

// Inputs with matrices of their own in one section (a mixture's experts):
// every output is the bits matmul gives that input and matrix alone, with
// few rows (streamed weights) and many.
TEST_P(QuantMatmulTest, EachInputWithItsMatricesGivesTheBitsOfMatmulAlone) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const WeightFormat f = GetParam();
    const int64_t cols = 96, wide = 160;
    const QuantMatrix a(f, randn(67 * cols, 1, 0.05f), 67, cols), b(f, randn(130 * cols, 2, 0.05f), 130, cols),
        c(f, randn(40 * wide, 3, 0.05f), 40, wide);
    const auto x1 = randn(1 * cols, 4), x2 = randn(3 * wide, 5), x3 = randn(70 * cols, 6);
    std::vector<float> a1(67), b1(130), c2(3 * 40), a3(70 * 67);
    const MatmulTarget t1[] = {{a.w, a1.data()}, {b.w, b1.data()}}, t2[] = {{c.w, c2.data()}},
                       t3[] = {{a.w, a3.data()}};
    const MatmulInput inputs[] = {{x1.data(), 1, t1}, {x2.data(), 3, t2}, {x3.data(), 70, t3}};
    matmul_each(inputs, pool);
    auto alone = [&](const std::vector<float>& x, int64_t n, const WeightMatrix& w) {
      std::vector<float> y(static_cast<size_t>(n * w.rows));
      matmul(x.data(), n, w, y.data(), pool);
      return y;
    };
    EXPECT_EQ(a1, alone(x1, 1, a.w)) << name(f);
    EXPECT_EQ(b1, alone(x1, 1, b.w)) << name(f);
    EXPECT_EQ(c2, alone(x2, 3, c.w)) << name(f);
    EXPECT_EQ(a3, alone(x3, 70, a.w)) << name(f);
  });
}

// The batching engine's contract at the kernel level: an activation row's
// outputs are the same bits whether it is multiplied alone (decode) or among
// any number of other rows (prefill), on every target.
TEST_P(QuantMatmulTest, PrefillRowsEqualDecodeBitForBit) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const WeightFormat f = GetParam();
    for (int64_t rows : {8, 24, 67, 1040})
      for (int64_t cols : {32, 1024})
        for (int64_t n : {13, 70}) {  // weights streamed once for all rows (<= 64), or prefill's order
          const QuantMatrix m(f, randn(rows * cols, rows + 3 * cols, 0.05f), rows, cols);
          const auto x = randn(n * cols, 21 + rows);
          std::vector<float> all(n * rows), one(rows);
          matmul(x.data(), n, m.w, all.data(), pool);
          for (int64_t i = 0; i < n; ++i) {
            matmul(&x[i * cols], 1, m.w, one.data(), pool);
            ASSERT_EQ(std::memcmp(one.data(), &all[i * rows], rows * sizeof(float)), 0)
                << name(f) << " rows=" << rows << " cols=" << cols << " n=" << n << " activation row " << i;
          }
        }
  });
}

// The AMX tiles (Q8/Q4 prefill on Intel Xeons since Sapphire Rapids) give
// the vector kernels' bits: every prefill row equals its decode. Where the
// CPU has no AMX its instructions run under an emulator (amx_emulator.h); the
// code around them needs AVX-512.
TEST_P(QuantMatmulTest, AmxTilesEqualDecodeBitForBit) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "AMX is x86-64's";
#else
  if ((hwy::SupportedTargets() & HWY_AVX3) == 0) GTEST_SKIP() << "the AMX kernels need AVX-512, which this CPU lacks";
  test::AmxEmulator emulator;
  struct AmxOn {
    AmxOn() { kernels::force_amx_for_tests(true); }
    ~AmxOn() { kernels::use_amx(true); }  // back to what the machine allows
  } amx_on;
  ThreadPool pool(2);
  const WeightFormat f = GetParam();
  const size_t emulated_before = test::AmxEmulator::instructions();
  // Weight rows: one group of 8, a whole and a half tile of 16, a padded last
  // group; blocks: one, an odd number, 32; activation rows: a whole number of
  // 16-row tiles or not, all more than the streamed kernels take.
  for (int64_t rows : {8, 24, 67})
    for (int64_t cols : {32, 96, 1024})
      for (int64_t n : {65, 80, 97}) {
        ASSERT_GT(n, static_cast<int64_t>(kernels::kStreamedRows));
        QuantMatrix m(f, randn(rows * cols, rows + 5 * cols, 0.05f), rows, cols);
        if (f == WeightFormat::Q8)  // code 0 (q = -128: Q8CodeZeroIsExactOnEveryTarget) in rows 0-7's first block
          for (size_t c = 0; c < 8; ++c) std::fill_n(&m.bytes[16 + 32 * c], 32, uint8_t{0});
        auto x = randn(n * cols, 17 + n);
        x[3] = 0;
        std::vector<float> all(n * rows), one(rows);
        matmul(x.data(), n, m.w, all.data(), pool);
        ASSERT_TRUE(matches_integer_reference(m.w, x, n, all)) << name(f) << " rows=" << rows << " cols=" << cols;
        for (int64_t i = 0; i < n; ++i) {
          matmul(&x[i * cols], 1, m.w, one.data(), pool);
          ASSERT_EQ(std::memcmp(one.data(), &all[i * rows], rows * sizeof(float)), 0)
              << name(f) << " rows=" << rows << " cols=" << cols << " n=" << n << " activation row " << i;
        }
      }
  if (emulator.emulated()) {
    EXPECT_GT(test::AmxEmulator::instructions(), emulated_before) << "the tiles did not run";
  }
#endif
}

// A Q8 code of 0 (q = -128) is never written by quantize_matrix, but a
// checkpoint quantized elsewhere may hold it: every target still computes the
// exact integer dot, in decode and prefill (the AVX2 kernel once took
// -128 * -x for -128 * x, moving x's sign onto a q that has no opposite).
TEST(QuantMatmul, Q8CodeZeroIsExactOnEveryTarget) {
  test::for_each_target([&] {
    ThreadPool pool(1);
    const int64_t rows = 16, cols = 64;
    QuantMatrix m(WeightFormat::Q8, randn(rows * cols, 5, 0.05f), rows, cols);
    for (size_t c = 0; c < 8; ++c)  // all codes of the first block of rows 0-7
      std::fill_n(&m.bytes[16 + 32 * c], 32, uint8_t{0});
    for (int64_t n : {1, 3}) {
      const auto x = randn(n * cols, 11 + n);
      std::vector<float> got(n * rows);
      matmul(x.data(), n, m.w, got.data(), pool);
      ASSERT_TRUE(matches_integer_reference(m.w, x, n, got)) << "n=" << n;
    }
  });
}

// The integer decode path differs from f32 math only by the activation's
// quantization: within a small relative error of the dequantized product.
TEST_P(QuantMatmulTest, DecodeCloseToDequantizedProduct) {
  ThreadPool pool(1);
  const WeightFormat f = GetParam();
  const int64_t rows = 64, cols = 1024;
  const QuantMatrix m(f, randn(rows * cols, 99, 0.05f), rows, cols);
  const auto x = randn(cols, 100);
  std::vector<float> got(rows), want(rows);
  matmul(x.data(), 1, m.w, got.data(), pool);
  matmul_ref(x.data(), 1, m.w, want.data());
  double err = 0, norm = 0;
  for (int64_t r = 0; r < rows; ++r) {
    err += (got[r] - want[r]) * (got[r] - want[r]);
    norm += want[r] * want[r];
  }
  // int8 activations: relative rms error ~ 1/(127 * sqrt(3)) per element, averaging down over k.
  EXPECT_LT(std::sqrt(err / norm), 0.01) << name(f);
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantMatmulTest, ::testing::Values(WeightFormat::Q8, WeightFormat::Q4),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });
