// Every kernel against its plain scalar version, at odd sizes.
#include "ops/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "each_target.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/ops_ref.h"
#include "ops/simd.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

namespace {

using test::randn;

// The raw bytes of `v` stored as dtype t (rounded to bf16 / f16 where needed).
std::vector<uint8_t> store_as(const std::vector<float>& v, DType t) {
  std::vector<uint8_t> out(v.size() * dtype_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[4 * i], &v[i], 4);
    } else if (t == DType::BF16) {
      uint16_t h = f32_to_bf16(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    } else {
      uint16_t h = f32_to_f16(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

// A float matrix from rows of bytes, as panels (the layout matmul takes).
struct PanelMatrix {
  std::vector<uint8_t> data;
  WeightMatrix w;
  PanelMatrix(const std::vector<uint8_t>& rows_bytes, DType t, int64_t rows, int64_t cols)
      : data(float_panel_bytes(weight_format_of(t), rows, cols)) {
    ThreadPool pool(1);
    w = pack_float_panels(WeightMatrix{weight_format_of(t), rows_bytes.data(), rows, cols}, data.data(), pool);
  }
};

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol * (1.0f + std::fabs(b[i]))) << what << " at " << i;
}

}  // namespace

// Against the compiler's own half type (QINFER_TEST_NATIVE_F16).
TEST(Dtype, F16WideningIsExactForAllBitPatterns) {
#ifndef QINFER_TEST_NATIVE_F16
  GTEST_SKIP() << "this compiler has no half-precision type for this target to compare with";
#else
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    QINFER_TEST_NATIVE_F16 native;
    std::memcpy(&native, &h, 2);
    const float want = static_cast<float>(native);
    const float got = f16_to_f32(h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(got, want) << bits;
    }
  }
#endif
}

TEST(Simd, WidenMatchesScalarOnAllDtypes) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (size_t n : {1u, 7u, 8u, 17u, 100u}) {
      auto bytes = store_as(randn(n, 3 + n), t);
      std::vector<float> got(n);
      simd::widen_f32(bytes.data(), t, n, got.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], load_as_f32(bytes.data(), t, i)) << dtype_name(t) << " " << i;
    }
}

TEST(Simd, DotAndAxpy) {
  for (size_t n : {1u, 5u, 16u, 31u, 129u}) {
    auto a = randn(n, 1), b = randn(n, 2);
    double want = 0;
    for (size_t i = 0; i < n; ++i) want += static_cast<double>(a[i]) * b[i];
    EXPECT_NEAR(simd::dot(a.data(), b.data(), n), want, 1e-4 * (1 + std::fabs(want)));
    auto y = b;
    simd::axpy(0.5f, a.data(), y.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(y[i], b[i] + 0.5f * a[i]);
  }
}

// axpy_bf16 is axpy on the widened values, bit for bit, on every target (the
// LoRA update keeps B in bf16 only because of this).
TEST(Simd, AxpyOfBf16IsAxpyOfItsWidenedValues) {
  test::for_each_target([&] {
    for (size_t n : {1u, 3u, 8u, 17u, 33u, 100u, 515u}) {
      const std::vector<uint8_t> bf16 = store_as(randn(n, 11 + n), DType::BF16);
      std::vector<float> widened(n);
      simd::widen_f32(bf16.data(), DType::BF16, n, widened.data());
      std::vector<float> want = randn(n, 29 + n), got = want;
      const float a = 0.37f + static_cast<float>(n);
      simd::axpy(a, widened.data(), want.data(), n);
      std::vector<uint16_t> bits(n);
      std::memcpy(bits.data(), bf16.data(), n * sizeof(uint16_t));
      simd::axpy_bf16(a, bits.data(), got.data(), n);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << "n = " << n;
    }
  });
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesScalarAtOddSizes) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const DType t = GetParam();
    for (int64_t n : {1, 2, 3, 7, 70})
      for (int64_t rows : {1, 5, 13, 67})
        for (int64_t cols : {1, 9, 33, 130}) {
          auto wbytes = store_as(randn(rows * cols, rows * 131 + cols), t);
          const WeightMatrix w{weight_format_of(t), wbytes.data(), rows, cols};
          const PanelMatrix packed(wbytes, t, rows, cols);
          auto x = randn(n * cols, 7 + n);
          std::vector<float> got(n * rows), want(n * rows);
          matmul(x.data(), n, packed.w, got.data(), pool);
          matmul_ref(x.data(), n, w, want.data());
          expect_close(got, want, 2e-5f,
                       "matmul " + std::string(dtype_name(t)) + " n=" + std::to_string(n) +
                           " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
        }
  });
}

// float_dot is the definition of a float weight row's sum: the kernels give
// its bits on every target that fuses multiply-adds, for any number of rows,
// at sizes around the panels, tiles and blocks (rows and k short of, at and
// past a multiple), including the widths decode and prefill share out.
TEST_P(MatmulTest, FloatWeightsGiveFloatDotBitForBit) {
  test::for_each_target([&] {
    if (!kernels::fused_float_dot()) return;  // SSSE3/SSE4, emulated: MatchesScalarAtOddSizes
    ThreadPool pool(2);
    const DType t = GetParam();
    for (int64_t n : {1, 2, 6, 13, 25, 70})  // 70: a few rows of weights cut the activation rows too
      for (int64_t rows : {1, 17, 31, 32, 33, 65, 130})
        for (int64_t cols : {1, 16, 31, 32, 33, 95, 300}) {
          auto wbytes = store_as(randn(rows * cols, rows * 7 + cols), t);
          const WeightMatrix w{weight_format_of(t), wbytes.data(), rows, cols};
          const PanelMatrix packed(wbytes, t, rows, cols);
          auto x = randn(n * cols, 3 + n);
          std::vector<float> got(n * rows);
          matmul(x.data(), n, packed.w, got.data(), pool);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t r = 0; r < rows; ++r)
              ASSERT_EQ(got[i * rows + r], float_dot(&x[i * cols], w.row_ptr(r), t, cols))
                  << dtype_name(t) << " n=" << n << " rows=" << rows << " cols=" << cols << " at " << i << "," << r;
        }
  });
}

// The kernels' contract (matmul_kernels.h): with float weights, a row of a
// batched (prefill) product is bit-identical to the same row multiplied
// alone (decode), so a cached prefix gives the logits a recomputation gives.
TEST_P(MatmulTest, PrefillRowsEqualDecodeBitForBit) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    const DType t = GetParam();
    const int64_t n = 7, rows = 37, cols = 300;
    const PanelMatrix w(store_as(randn(rows * cols, 5), t), t, rows, cols);
    auto x = randn(n * cols, 6);
    std::vector<float> batched(n * rows), single(rows);
    matmul(x.data(), n, w.w, batched.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      matmul(x.data() + i * cols, 1, w.w, single.data(), pool);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(batched[i * rows + r], single[r]) << dtype_name(t) << " row " << i << " output " << r;
    }
  });
}

// Panels keep every row: read back (as stored and widened) they are the rows
// they were packed from, the padding past the last row is not a row, and
// matmul refuses float rows it was not given as panels.
TEST_P(MatmulTest, PanelsHoldTheRowsTheyWerePackedFrom) {
  const DType t = GetParam();
  // Whole panels take the transposing kernel, with columns past its last block
  // (19, 77) and several 64-column strips (77); a partial panel the plain loop.
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 19}, {32, 19}, {45, 19}, {70, 77}, {64, 8}}) {
    const auto wbytes = store_as(randn(rows * cols, 9), t);
    const WeightMatrix w{weight_format_of(t), wbytes.data(), rows, cols};
    const PanelMatrix packed(wbytes, t, rows, cols);
    EXPECT_EQ(packed.w.bytes(), static_cast<size_t>((rows + 31) / 32 * 32 * cols) * dtype_size(t));
    std::vector<uint8_t> row(w.row_bytes());
    std::vector<float> wide(cols), want(cols);
    for (int64_t r = 0; r < rows; ++r) {
      copy_float_row(packed.w, r, row.data());
      ASSERT_EQ(0, std::memcmp(row.data(), w.row_ptr(r), row.size())) << "row " << r;
      widen_row(packed.w, r, wide.data());
      widen_row(w, r, want.data());
      ASSERT_EQ(wide, want) << "row " << r;
    }
    std::vector<float> x(cols, 1.0f), y(rows);
    ThreadPool pool(1);
    EXPECT_THROW(matmul(x.data(), 1, w, y.data(), pool), Error);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, MatmulTest, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// bf16_operand rounds to nearest even and flushes subnormals, as vdpbf16ps reads its operands.
TEST(Bf16Products, OperandRoundsToNearestEvenAndFlushesSubnormals) {
  const float half_ulp = std::ldexp(1.0f, -8);  // half a bf16 ulp at 1
  EXPECT_EQ(bf16_operand(1.0f), 0x3f80);
  EXPECT_EQ(bf16_operand(1.0f + half_ulp), 0x3f80);                  // tie: to the even 1.0
  EXPECT_EQ(bf16_operand(1.0f + 3 * half_ulp), 0x3f82);              // tie: to the even 1.015625
  EXPECT_EQ(bf16_operand(1.0f + half_ulp + half_ulp / 64), 0x3f81);  // past the tie: up
  EXPECT_EQ(bf16_operand(-2.5f), 0xc020);
  EXPECT_EQ(bf16_operand(1e-40f), 0x0000);                             // subnormal
  EXPECT_EQ(bf16_operand(-1e-40f), 0x8000);                            // keeps its sign
  EXPECT_EQ(bf16_operand(std::numeric_limits<float>::min()), 0x0080);  // the least normal stays
  EXPECT_TRUE(std::isnan(bf16_to_f32(bf16_operand(std::nanf("")))));
  EXPECT_EQ(bf16_operand(std::numeric_limits<float>::infinity()), 0x7f80);
}

// Weights with bf16_products give bf16_pair_dot's bits on every target (with
// vdpbf16ps where the CPU has AVX512-BF16, two multiply-adds elsewhere), for
// any number of rows, at sizes around the panels, tiles and blocks; a row of
// a batched product equals the row alone. Subnormal weights and activations
// are among the values.
TEST(Bf16Products, GiveBf16PairDotBitForBitOnEveryTarget) {
  test::for_each_target([&] {
    ThreadPool pool(2);
    for (int64_t n : {1, 2, 6, 13, 25, 70})  // 70: a few rows of weights cut the activation rows too
      for (int64_t rows : {1, 17, 32, 33, 65})
        for (int64_t cols : {2, 16, 30, 32, 34, 96, 300}) {
          auto wbytes = store_as(randn(rows * cols, rows * 5 + cols), DType::BF16);
          for (size_t e = 3; e < wbytes.size() / 2; e += 37) {  // subnormal weights: count as zero
            const uint16_t sub = e % 2 ? 0x0005 : 0x8040;
            std::memcpy(&wbytes[2 * e], &sub, 2);
          }
          PanelMatrix packed(wbytes, DType::BF16, rows, cols);
          packed.w.bf16_products = true;
          auto x = randn(n * cols, 11 + n);
          for (size_t e = 5; e < x.size(); e += 29) x[e] = e % 2 ? 3e-39f : -1e-40f;  // subnormal activations
          std::vector<float> got(n * rows), single(rows);
          matmul(x.data(), n, packed.w, got.data(), pool);
          for (int64_t i = 0; i < n; ++i) {
            matmul(&x[i * cols], 1, packed.w, single.data(), pool);
            for (int64_t r = 0; r < rows; ++r) {
              const float want = bf16_pair_dot(&x[i * cols], &wbytes[2 * r * cols], cols);
              ASSERT_EQ(got[i * rows + r], want) << kernels::bf16_product_path() << " n=" << n << " rows=" << rows
                                                 << " cols=" << cols << " at " << i << "," << r;
              ASSERT_EQ(single[r], want) << "decode, rows=" << rows << " cols=" << cols << " at " << i << "," << r;
            }
          }
        }
  });
}

// Sums that fall below the least normal float become zeros on every target,
// as vdpbf16ps makes them: products of ~1e-20 by ~1e-19 are subnormal.
TEST(Bf16Products, SubnormalSumsAreZerosOnEveryTarget) {
  test::for_each_target([&] {
    ThreadPool pool(1);
    const int64_t n = 3, rows = 33, cols = 64;
    auto w = randn(rows * cols, 4), x = randn(n * cols, 5);
    for (float& v : w) v *= 1e-19f;
    for (float& v : x) v *= 1e-20f;
    const auto wbytes = store_as(w, DType::BF16);
    PanelMatrix packed(wbytes, DType::BF16, rows, cols);
    packed.w.bf16_products = true;
    std::vector<float> got(n * rows);
    matmul(x.data(), n, packed.w, got.data(), pool);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(got[i * rows + r], bf16_pair_dot(&x[i * cols], &wbytes[2 * r * cols], cols)) << i << "," << r;
        ASSERT_EQ(got[i * rows + r], 0.0f) << i << "," << r;
      }
  });
}

// The pair sum is close to the exact product of the rounded operands, and
// its pairs are added the way round (high half first) that vdpbf16ps adds them:
// the two orders differ for some of these sums.
TEST(Bf16Products, PairDotAddsTheHighHalfFirst) {
  const size_t k = 64;
  int differ = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    auto x = randn(k, seed), w = randn(k, 1000 + seed);
    auto wbytes = store_as(w, DType::BF16);
    std::vector<float> swapped_x(k), swapped_w(k);
    for (size_t e = 0; e < k; ++e) {
      swapped_x[e] = x[e ^ 1];
      swapped_w[e] = bf16_to_f32(f32_to_bf16(w[e ^ 1]));
    }
    auto swapped_bytes = store_as(swapped_w, DType::BF16);
    const float got = bf16_pair_dot(x.data(), wbytes.data(), k);
    double exact = 0;
    for (size_t e = 0; e < k; ++e) exact += static_cast<double>(bf16_to_f32(bf16_operand(x[e]))) * swapped_w[e ^ 1];
    ASSERT_NEAR(got, exact, 1e-5 * (1 + std::fabs(exact)));
    differ += got != bf16_pair_dot(swapped_x.data(), swapped_bytes.data(), k);
  }
  EXPECT_GT(differ, 0) << "swapping each pair's halves never changed a sum: the order is untested";
}

TEST(Simd, FmaPeakWorkCountsTwoFlopsPerLanePerFma) {
  const double w = simd::fma_peak_work(1000);
  EXPECT_GT(w, 0);
  EXPECT_EQ(std::fmod(w, 2 * 12 * 1000), 0);  // 12 chains of 2-flop FMAs per iteration, whole vectors
  EXPECT_EQ(simd::fma_peak_work(2000), 2 * w);
}

TEST(Ops, RmsNorm) {
  ThreadPool pool(2);
  for (int64_t dim : {1, 7, 24, 129}) {
    auto x = randn(3 * dim, 11, 3.0f), w = randn(dim, 12);
    std::vector<float> got(x.size()), want(x.size());
    rmsnorm(x.data(), w.data(), 3, dim, 1e-6f, got.data(), pool);
    ref::rmsnorm(x.data(), w.data(), 3, dim, 1e-6f, want.data());
    expect_close(got, want, 1e-5f, "rmsnorm dim=" + std::to_string(dim));
    rmsnorm(x.data(), w.data(), 3, dim, 1e-6f, x.data(), pool);  // in place
    expect_close(x, want, 1e-5f, "rmsnorm in place");
  }
}

// Enough rows that rmsnorm, rope and add_in_place share them out among the
// threads: each row gets the bits it gets alone.
TEST(Ops, RowOpsSharedOutGiveEachRowItsBitsAlone) {
  ThreadPool pool(2);
  const int64_t n = 300, dim = 129, heads = 2, hd = 64;
  const auto x = randn(n * dim, 31), w = randn(dim, 32), y = randn(n * dim, 33);
  std::vector<float> together(x.size()), alone(dim);
  rmsnorm(x.data(), w.data(), n, dim, 1e-6f, together.data(), pool);
  for (int64_t r = 0; r < n; ++r) {
    rmsnorm(&x[r * dim], w.data(), 1, dim, 1e-6f, alone.data(), pool);
    ASSERT_EQ(std::memcmp(alone.data(), &together[r * dim], dim * sizeof(float)), 0) << "rmsnorm row " << r;
  }
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 7);
  std::vector<float> inv(hd / 2), cs(n * hd);
  rope_inv_freq(1e6, hd, inv.data());
  rope_cos_sin(pos.data(), n, inv.data(), hd, cs.data());
  auto rotated = randn(n * heads * hd, 34);
  const auto original = rotated;
  rope(rotated.data(), n, heads, hd, cs.data(), pool);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> one(&original[t * heads * hd], &original[(t + 1) * heads * hd]);
    rope(one.data(), 1, heads, hd, &cs[t * hd], pool);
    ASSERT_EQ(std::memcmp(one.data(), &rotated[t * heads * hd], one.size() * sizeof(float)), 0) << "rope row " << t;
  }
  auto sum = x;
  add_in_place(sum.data(), y.data(), n * dim, pool);
  for (int64_t i = 0; i < n * dim; ++i) ASSERT_EQ(sum[i], x[i] + y[i]) << i;
}

TEST(Ops, RopeAtLaterPositions) {
  ThreadPool pool(2);
  const int64_t hd = 24, heads = 3, n = 4;
  const int32_t pos[n] = {0, 1, 37, 1000};
  std::vector<float> inv(hd / 2);
  rope_inv_freq(1e6, hd, inv.data());
  auto x = randn(n * heads * hd, 5);
  auto want = x;
  std::vector<float> cs(n * hd);
  rope_cos_sin(pos, n, inv.data(), hd, cs.data());
  rope(x.data(), n, heads, hd, cs.data(), pool);
  ref::rope(want.data(), n, heads, hd, pos, 1e6);
  expect_close(x, want, 2e-5f, "rope");
  auto orig = randn(n * heads * hd, 5);
  for (int64_t i = 0; i < heads * hd; ++i) ASSERT_EQ(x[i], orig[i]) << "position 0 must be the identity";
  bool moved = false;
  for (int64_t i = 3 * heads * hd; i < 4 * heads * hd; ++i) moved |= std::fabs(x[i] - orig[i]) > 1e-3f;
  EXPECT_TRUE(moved) << "position 1000 must rotate";
}

// YaRN with Qwen3's card values (head_dim 128, theta 1e6, factor 4, 32,768
// original positions): dimension i turns 32,768 / (2 pi theta^(2i/128))
// times within the original context; 32 turns is i = 23.6 and 1 turn
// i = 39.6, rounded outward to 23 and 40. Below 23 the frequencies are
// rope's, from 40 on rope's / 4, between them a linear blend.
TEST(Ops, YarnKeepsFastDimensionsAndSlowsTheSlowOnes) {
  const int64_t hd = 128;
  std::vector<float> plain(hd / 2), yarn(hd / 2), untruncated(hd / 2);
  rope_inv_freq(1e6, hd, plain.data());
  yarn_inv_freq(1e6, hd, 4.0, 32768, 32, 1, true, yarn.data());
  yarn_inv_freq(1e6, hd, 4.0, 32768, 32, 1, false, untruncated.data());
  for (int64_t i = 0; i < hd / 2; ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - 23) / (40 - 23), 0.0, 1.0);
    const double want = plain[i] / 4.0 * ramp + plain[i] * (1 - ramp);
    if (i < 23) {
      EXPECT_EQ(yarn[i], plain[i]) << i;
    }
    EXPECT_NEAR(yarn[i], want, 1e-6 * want) << i;
    const double low = 128 * std::log(32768 / (32 * 2 * std::numbers::pi)) / (2 * std::log(1e6)),
                 high = 128 * std::log(32768 / (2 * std::numbers::pi)) / (2 * std::log(1e6));
    const double ramp2 = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    EXPECT_NEAR(untruncated[i], plain[i] / 4.0 * ramp2 + plain[i] * (1 - ramp2), 1e-6 * plain[i]) << i;
  }
  EXPECT_NEAR(yarn[hd / 2 - 1], plain[hd / 2 - 1] / 4, 1e-6 * plain[hd / 2 - 1]);
  // The attention factor scales cos and sin alike.
  const int32_t pos[2] = {3, 70000};
  std::vector<float> cs(2 * hd), scaled(2 * hd);
  rope_cos_sin(pos, 2, yarn.data(), hd, cs.data());
  rope_cos_sin(pos, 2, yarn.data(), hd, scaled.data(), 1.25f);
  for (int64_t i = 0; i < 2 * hd; ++i) ASSERT_EQ(scaled[i], cs[i] * 1.25f) << i;
}

TEST(Ops, SiluMulAndSoftmax) {
  auto g = randn(37, 1, 4.0f), u = randn(37, 2);
  std::vector<float> got(37), want(37);
  ThreadPool pool(2);
  silu_mul(g.data(), u.data(), 37, got.data(), pool);
  ref::silu_mul(g.data(), u.data(), 37, want.data());
  expect_close(got, want, 1e-6f, "silu_mul");

  std::vector<float> s = {1e4f, -1e4f, 0.0f, 9999.0f, 3.0f}, sr = s;
  softmax(s.data(), 5);
  ref::softmax(sr.data(), 5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(std::isfinite(s[i]));
    ASSERT_NEAR(s[i], sr[i], 1e-6f);
  }
}

// Top-k routing against the definition: softmax in double, the k largest,
// ties to the lower expert, divided by their sum when normalizing.
TEST(Ops, RouteTopKPicksTheMostProbableExpertsInOrder) {
  const int64_t E = 6, K = 3;
  const std::vector<float> logits = {0.5f,  2.0f, -1.0f, 2.0f, 1.5f, 0.0f,   // a tie: expert 1 before 3
                                     -3.0f, 0.0f, 0.0f,  0.0f, 0.0f, 4.0f,   // ties past the first
                                     NAN,   1.0f, 2.0f,  3.0f, 4.0f, 5.0f};  // NaN: still k distinct experts
  for (bool normalize : {false, true}) {
    std::vector<int32_t> experts(3 * K);
    std::vector<float> weights(3 * K);
    route_top_k(logits.data(), 3, E, K, normalize, experts.data(), weights.data());
    EXPECT_EQ(std::vector<int32_t>(experts.begin(), experts.begin() + 6), (std::vector<int32_t>{1, 3, 4, 5, 1, 2}));
    const std::set<int32_t> nan_row(experts.begin() + 6, experts.end());
    EXPECT_EQ(nan_row.size(), 3u);
    for (int32_t e : nan_row) EXPECT_TRUE(e >= 0 && e < E) << e;
    for (int64_t r = 0; r < 2; ++r) {
      double z = 0, picked = 0;
      for (int64_t e = 0; e < E; ++e) z += std::exp(static_cast<double>(logits[r * E + e]));
      for (int64_t j = 0; j < K; ++j) picked += std::exp(static_cast<double>(logits[r * E + experts[r * K + j]])) / z;
      for (int64_t j = 0; j < K; ++j) {
        const double p = std::exp(static_cast<double>(logits[r * E + experts[r * K + j]])) / z;
        EXPECT_NEAR(weights[r * K + j], normalize ? p / picked : p, 1e-6) << "row " << r << " pick " << j;
      }
    }
  }
}

TEST(Ops, AttentionGqaCausalWithOffset) {
  ThreadPool pool(2);
  for (auto [n_heads, n_kv, hd] : {std::tuple{4, 2, 24}, std::tuple{6, 1, 7}, std::tuple{3, 3, 16}})
    for (auto [n, pos0] : {std::pair{1, 0}, std::pair{5, 0}, std::pair{1, 40}, std::pair{3, 17},
                           // keys in several chunks of kAttentionKeyChunk (512), merged
                           std::pair{1, 1024}, std::pair{40, 500}, std::pair{3, 1100}}) {
      const int64_t total = pos0 + n;
      auto q = randn(n * n_heads * hd, 1), k = randn(total * n_kv * hd, 2), v = randn(total * n_kv * hd, 3);
      std::vector<float> got(q.size()), want(q.size());
      attention(q.data(), n, pos0, k.data(), v.data(), {n_heads, n_kv, hd}, got.data(), pool);
      ref::attention(q.data(), n, pos0, k.data(), v.data(), n_heads, n_kv, hd, want.data());
      expect_close(got, want, 2e-5f, "attention");
    }
}

// Rows [positions][n_kv][hd] of type t stored as both the keys and the values
// of a KV pool of block_size-position blocks, taken in a shuffled order; NaN
// in every slot no position fills.
struct ShuffledBlocks {
  std::vector<uint8_t> pool;
  std::vector<int32_t> table;
  KvBlocks kv;

  ShuffledBlocks(const std::vector<uint8_t>& rows, DType t, int64_t positions, int64_t n_kv, int64_t hd,
                 int64_t block_size)
      : table((positions + block_size - 1) / block_size) {
    const size_t elem = dtype_size(t), half = static_cast<size_t>(block_size * n_kv * hd) * elem;
    pool.assign(table.size() * 2 * half, 0xff);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937(static_cast<uint32_t>(table.size())));
    for (size_t b = 0; b < table.size(); ++b) {
      const int64_t first = static_cast<int64_t>(b) * block_size;
      const uint8_t* from = &rows[static_cast<size_t>(first * n_kv * hd) * elem];
      store_in_block(from, from, t, std::min(block_size, positions - first), n_kv, hd, block_size, 0,
                     &pool[table[b] * 2 * half], &pool[table[b] * 2 * half + half]);
    }
    kv = {pool.data(), pool.data() + half, 2 * half, table.data(), block_size, t};
  }
};

// Each attention score is one multiply-add chain over the dimensions in order
// (fused where the target fuses): on every target, for every KV type, at block
// sizes short of, at and past the vector widths, with key ranges that start
// and end inside blocks and blocks in a shuffled order. So a score cannot
// depend on the keys or rows computed alongside or on the blocks.
TEST(Ops, AttentionScoresAreOneMultiplyAddChainPerKeyOnEveryTarget) {
  test::for_each_target([&] {
    const bool fused = kernels::fused_float_dot();
    const int64_t n_kv = 2, head = 1;
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (int64_t hd : {7, 24, 128})
        for (int64_t block_size : {1, 3, 16, 21, 128})
          for (auto [nq, p0, p1] : {std::tuple{1, 0, 1}, std::tuple{2, 5, 70}, std::tuple{7, 0, 64},
                                    std::tuple{13, 19, 300}, std::tuple{6, 127, 129}}) {
            const int64_t row = n_kv * hd;
            const auto keys = store_as(randn(p1 * row, hd + p1), t);  // [p1][n_kv][hd]
            const ShuffledBlocks blocks(keys, t, p1, n_kv, hd, block_size);
            const auto q = randn(nq * hd, 3 * hd);
            const int64_t len = p1 - p0;
            std::vector<float> got(nq * len, NAN);
            kernels::attention_scores(q.data(), nq, hd, blocks.kv, head, hd, p0, p1, got.data(), len);
            for (int64_t i = 0; i < nq; ++i)
              for (int64_t p = p0; p < p1; ++p) {
                float want = 0;
                for (int64_t d = 0; d < hd; ++d) {
                  const float k = load_as_f32(keys.data(), t, p * row + head * hd + d), x = q[i * hd + d];
                  want = fused ? std::fma(x, k, want)
                               : want + static_cast<float>(static_cast<double>(x) * static_cast<double>(k));
                }
                ASSERT_EQ(std::bit_cast<uint32_t>(got[i * len + p - p0]), std::bit_cast<uint32_t>(want))
                    << dtype_name(t) << " hd=" << hd << " blocks of " << block_size << " row " << i << " position " << p
                    << " of [" << p0 << ", " << p1 << ")";
              }
          }
  });
}

// Each attention output column is one multiply-add chain over the positions
// in order (fused where the target fuses): on every target, for every KV
// type, whatever the blocks (head_dim a multiple of every target's vector).
TEST(Ops, AttentionValuesAreOneMultiplyAddChainPerColumnOnEveryTarget) {
  test::for_each_target([&] {
    const bool fused = kernels::fused_float_dot();
    const int64_t n_kv = 2, head = 1;
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (int64_t hd : {16, 128})
        for (int64_t block_size : {1, 5, 16, 128})
          for (auto [np, p0, p1] : {std::tuple{1, 0, 1}, std::tuple{2, 5, 70}, std::tuple{13, 19, 300}}) {
            const int64_t row = n_kv * hd, len = p1 - p0;
            const auto values = store_as(randn(p1 * row, hd + p1), t);  // [p1][n_kv][hd]
            const ShuffledBlocks blocks(values, t, p1, n_kv, hd, block_size);
            const auto probs = randn(np * len, 5 * hd);
            std::vector<float> got(np * hd, NAN);
            kernels::attention_values(probs.data(), np, len, blocks.kv, head, hd, p0, p1, got.data(), hd);
            for (int64_t i = 0; i < np; ++i)
              for (int64_t c = 0; c < hd; ++c) {
                float want = 0;
                for (int64_t p = p0; p < p1; ++p) {
                  const float v = load_as_f32(values.data(), t, p * row + head * hd + c), x = probs[i * len + p - p0];
                  want = fused ? std::fma(x, v, want)
                               : want + static_cast<float>(static_cast<double>(x) * static_cast<double>(v));
                }
                ASSERT_EQ(std::bit_cast<uint32_t>(got[i * hd + c]), std::bit_cast<uint32_t>(want))
                    << dtype_name(t) << " hd=" << hd << " blocks of " << block_size << " row " << i << " column " << c
                    << " over [" << p0 << ", " << p1 << ")";
              }
          }
  });
}

// Query rows computed together (prefill) give the bits of the same rows
// computed one at a time (decode), also where a row's keys span several
// chunks and where the rows of one block see different numbers of chunks.
TEST(Ops, AttentionRowsEqualOneAtATimeBitForBit) {
  ThreadPool pool(2);
  const int64_t n_heads = 4, n_kv = 2, hd = 24, n = 40, pos0 = 1010;  // positions 1010..1049 cross 1024
  const int64_t total = pos0 + n, row = n_heads * hd;
  const auto q = randn(n * row, 21), k = randn(total * n_kv * hd, 22), v = randn(total * n_kv * hd, 23);
  std::vector<float> together(q.size()), alone(row);
  attention(q.data(), n, pos0, k.data(), v.data(), {n_heads, n_kv, hd}, together.data(), pool);
  for (int64_t t = 0; t < n; ++t) {
    attention(&q[t * row], 1, pos0 + t, k.data(), v.data(), {n_heads, n_kv, hd}, alone.data(), pool);
    ASSERT_EQ(std::memcmp(alone.data(), &together[t * row], row * sizeof(float)), 0) << "position " << pos0 + t;
  }
}

// Keys and values in blocks of a pool, in a shuffled block order, give the
// same bits as one contiguous cache; and several sequences in one call give
// each the bits it gets alone (the batching engine's contract).
TEST(Ops, PagedAttentionOfABatchEqualsContiguousBitForBit) {
  ThreadPool pool(2);
  const int64_t n_heads = 4, n_kv = 2, hd = 24, row = n_kv * hd;
  for (int64_t block_size : {3, 16}) {
    struct Seq {
      int64_t n, pos0;
      std::vector<float> q, k, v, alone;
      std::vector<int32_t> table;
    };
    std::vector<Seq> seqs;
    for (auto [n, pos0] : {std::pair{1, 40}, std::pair{7, 0}, std::pair{3, 17}, std::pair{1, 5}, std::pair{2, 1030}}) {
      Seq q{n,
            pos0,
            randn(n * n_heads * hd, 11 + n),
            randn((pos0 + n) * row, 12 + pos0),
            randn((pos0 + n) * row, 13 + pos0),
            {},
            {}};
      q.alone.resize(q.q.size());
      attention(q.q.data(), n, pos0, q.k.data(), q.v.data(), {n_heads, n_kv, hd}, q.alone.data(), pool);
      seqs.push_back(std::move(q));
    }
    // A pool of blocks [block][k|v] (KvBlocks' layout); each sequence's
    // blocks taken in reverse order.
    int64_t total_blocks = 0;
    for (const Seq& q : seqs) total_blocks += (q.pos0 + q.n + block_size - 1) / block_size;
    const size_t block_floats = static_cast<size_t>(2 * block_size * row);
    std::vector<float> kv_pool(total_blocks * block_floats, NAN);  // unused slots poison a wrong read
    int32_t next = static_cast<int32_t>(total_blocks);
    for (Seq& q : seqs) {
      for (int64_t p0 = 0; p0 < q.pos0 + q.n; p0 += block_size) {
        const int32_t b = --next;
        q.table.push_back(b);
        const int64_t count = std::min(q.pos0 + q.n - p0, block_size);
        store_in_block(&q.k[p0 * row], &q.v[p0 * row], DType::F32, count, n_kv, hd, block_size, 0,
                       &kv_pool[b * block_floats], &kv_pool[b * block_floats + block_size * row]);
      }
    }
    std::vector<std::vector<float>> outs;
    for (const Seq& q : seqs) outs.emplace_back(q.q.size());
    std::vector<AttentionSeq> batch;
    const auto* base = reinterpret_cast<const uint8_t*>(kv_pool.data());
    for (size_t i = 0; i < seqs.size(); ++i)
      batch.push_back({seqs[i].q.data(),
                       outs[i].data(),
                       seqs[i].n,
                       seqs[i].pos0,
                       {base, base + block_size * row * sizeof(float), block_floats * sizeof(float),
                        seqs[i].table.data(), block_size, DType::F32}});
    attention(batch, {n_heads, n_kv, hd}, pool);
    for (size_t i = 0; i < seqs.size(); ++i)
      ASSERT_EQ(std::memcmp(outs[i].data(), seqs[i].alone.data(), outs[i].size() * sizeof(float)), 0)
          << "sequence " << i << ", blocks of " << block_size;
  }
}

// --simd: each runnable target can be chosen by name, whatever its case, and
// leaves only itself and the lesser ones; a name this CPU cannot run changes
// nothing.
TEST(SimdTarget, LimitDispatchesToTheNamedTargetOnly) {
  const std::string all = simd::runnable_targets(), best = simd::dispatched_target();
  std::istringstream in(all);
  std::vector<std::string> names;
  for (std::string name; in >> name;) names.push_back(name);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(best, names.front());
  for (const std::string& name : names) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(simd::limit_target(lower)) << name;
    EXPECT_EQ(simd::dispatched_target(), name);
    EXPECT_EQ(simd::runnable_targets(), all.substr((" " + all + " ").find(" " + name + " ")))
        << "the better targets are gone";
    EXPECT_NE(std::string(kernels::int8_dot_path()).find(name == "AVX2_VNNI" ? "AVX-VNNI" : ""), std::string::npos)
        << name << ": " << kernels::int8_dot_path();
    hwy::DisableTargets(0);
    simd::use_avx_vnni(true);
  }
  EXPECT_FALSE(simd::limit_target("AVX9"));
  EXPECT_FALSE(simd::limit_target(""));
  EXPECT_EQ(simd::dispatched_target(), best);
  EXPECT_EQ(simd::runnable_targets(), all);
  // A refused name leaves an earlier limit as it was.
  ASSERT_TRUE(simd::limit_target(names.back()));
  EXPECT_FALSE(simd::limit_target("AVX9"));
  EXPECT_EQ(simd::dispatched_target(), names.back());
  hwy::DisableTargets(0);
  simd::use_avx_vnni(true);
}
