// The AMX emulator: kernels written with the _tile_* intrinsics against scalar
// references written from the Intel SDM's pseudocode (DPBD for TDPB*D, the
// FMA pairs of TDPBF16PS), the addressing forms its decoder must handle, the
// state outside the configured shapes, per-thread tile state, and the faults
// a real CPU raises turned into aborts naming what is wrong. On a CPU with AMX
// the same kernels run natively, which checks the references.
#if defined(__x86_64__)
#include "amx_emulator.h"

#include <gtest/gtest.h>
#include <immintrin.h>
#include <signal.h>
#include <sys/mman.h>

#include <barrier>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace qinfer::test {
namespace {

#define QINFER_AMX_KERNEL __attribute__((target("amx-tile,amx-int8,amx-bf16"), noinline))

// GCC's intrinsics tell the compiler that LDTILECFG reads 8 bytes and that
// TILELOADD reads no memory at all, so without a barrier the stores that
// filled a configuration or a matrix may be dropped or sunk past them.
inline void memory_barrier() { asm volatile("" ::: "memory"); }

// LDTILECFG's 64-byte operand.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved_2_15[14] = {};
  uint16_t colsb[8] = {};
  uint8_t reserved_32_47[16] = {};
  uint8_t rows[8] = {};
  uint8_t reserved_56_63[8] = {};

  TileConfig& tile(int tmm, int tile_rows, int tile_colsb) {
    rows[tmm] = static_cast<uint8_t>(tile_rows);
    colsb[tmm] = static_cast<uint16_t>(tile_colsb);
    return *this;
  }
};
static_assert(sizeof(TileConfig) == 64);

QINFER_AMX_KERNEL void load_config(const TileConfig& config) {
  memory_barrier();
  _tile_loadconfig(&config);
}

QINFER_AMX_KERNEL void store_config(void* out) {
  _tile_storeconfig(out);
  memory_barrier();
}

QINFER_AMX_KERNEL void release_tiles() { _tile_release(); }

// A matrix of `rows` rows of `row_bytes` bytes, `stride` bytes apart. Every
// byte starts as noise, so bytes a tile instruction must not read or write
// (past a row, between rows) show up when it does.
struct Matrix {
  int rows, row_bytes;
  long stride;
  std::vector<uint8_t> bytes;

  Matrix(int rows_, int row_bytes_, long stride_, std::mt19937& rng)
      : rows(rows_), row_bytes(row_bytes_), stride(stride_), bytes(static_cast<size_t>(rows_ * stride_ + 64)) {
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  }
  uint8_t* row(int r) { return bytes.data() + r * stride; }
  const uint8_t* row(int r) const { return bytes.data() + r * stride; }
  uint32_t dword(int r, int i) const {
    uint32_t v;
    std::memcpy(&v, row(r) + 4 * i, 4);
    return v;
  }
  void set_dword(int r, int i, uint32_t v) { std::memcpy(row(r) + 4 * i, &v, 4); }
  float fp32(int r, int i) const { return std::bit_cast<float>(dword(r, i)); }
  uint16_t bf16(int r, int i) const {
    uint16_t v;
    std::memcpy(&v, row(r) + 2 * i, 2);
    return v;
  }
  void set_bf16(int r, int i, uint16_t v) { std::memcpy(row(r) + 2 * i, &v, 2); }
};

// C (M x N dwords) += A (M x K dwords) x B (K x N dwords, 4 bytes or 2 bf16
// of column n in dword n of each row: the layout TDP* multiplies).
struct Product {
  int m, n, k;
  Matrix a, b, c;
  Product(int m_, int n_, int k_, int a_pad, int b_pad, int c_pad, std::mt19937& rng)
      : m(m_),
        n(n_),
        k(k_),
        a(m_, 4 * k_, 4 * k_ + a_pad, rng),
        b(k_, 4 * n_, 4 * n_ + b_pad, rng),
        c(m_, 4 * n_, 4 * n_ + c_pad, rng) {}
};

struct TileOperands {
  const void* a;
  long a_stride;
  const void* b;
  long b_stride;
  void* c;
  long c_stride;
};

TileOperands operands(Product& p) {
  return {p.a.bytes.data(), p.a.stride, p.b.bytes.data(), p.b.stride, p.c.bytes.data(), p.c.stride};
}

// One C += A x B in the tile registers tc, ta, tb: load C, A and B (B with
// the streaming hint), multiply, store C, release. GCC's _tile_* macros paste
// the register number into the assembly text, so it must be a literal: hence
// one kernel stamped out per register choice.
#define QINFER_DEFINE_PRODUCT_KERNEL(name, dot, tc, ta, tb)                      \
  QINFER_AMX_KERNEL void name(const TileConfig& config, const TileOperands& o) { \
    memory_barrier();                                                            \
    _tile_loadconfig(&config);                                                   \
    _tile_loadd(tc, o.c, o.c_stride);                                            \
    _tile_loadd(ta, o.a, o.a_stride);                                            \
    _tile_stream_loadd(tb, o.b, o.b_stride);                                     \
    dot(tc, ta, tb);                                                             \
    _tile_stored(tc, o.c, o.c_stride);                                           \
    _tile_release();                                                             \
  }

QINFER_DEFINE_PRODUCT_KERNEL(product_ssd, _tile_dpbssd, 0, 1, 2)
QINFER_DEFINE_PRODUCT_KERNEL(product_sud, _tile_dpbsud, 3, 4, 5)
QINFER_DEFINE_PRODUCT_KERNEL(product_usd, _tile_dpbusd, 6, 7, 0)
QINFER_DEFINE_PRODUCT_KERNEL(product_uud, _tile_dpbuud, 7, 2, 1)
QINFER_DEFINE_PRODUCT_KERNEL(product_bf16, _tile_dpbf16ps, 5, 3, 6)

using ProductKernel = void (*)(const TileConfig&, const TileOperands&);

// Which bytes of A and B are signed: the mnemonic's first letter is A's
// (src1), the second B's (src2).
struct Int8Op {
  const char* mnemonic;
  bool a_signed, b_signed;
  ProductKernel kernel;
  int tc, ta, tb;
};

const Int8Op kInt8Ops[] = {
    {"TDPBSSD", true, true, product_ssd, 0, 1, 2},
    {"TDPBSUD", true, false, product_sud, 3, 4, 5},
    {"TDPBUSD", false, true, product_usd, 6, 7, 0},
    {"TDPBUUD", false, false, product_uud, 7, 2, 1},
};

TileConfig product_config(const Product& p, int tc, int ta, int tb) {
  TileConfig config;
  config.tile(tc, p.m, 4 * p.n).tile(ta, p.m, 4 * p.k).tile(tb, p.k, 4 * p.n);
  return config;
}

// The SDM's DPBD over a whole product: C.dword[m][n] += the four products of
// the extended bytes of A.dword[m][k] and B.dword[k][n], for each k, in 32-bit
// arithmetic that wraps around.
void reference_int8(bool a_signed, bool b_signed, Product& p) {
  auto extend = [](uint8_t byte, bool is_signed) -> int32_t { return is_signed ? int8_t(byte) : byte; };
  for (int m = 0; m < p.m; ++m) {
    for (int n = 0; n < p.n; ++n) {
      uint32_t c = p.c.dword(m, n);
      for (int k = 0; k < p.k; ++k) {
        const uint8_t* x = p.a.row(m) + 4 * k;
        const uint8_t* y = p.b.row(k) + 4 * n;
        for (int i = 0; i < 4; ++i) c += static_cast<uint32_t>(extend(x[i], a_signed) * extend(y[i], b_signed));
      }
      p.c.set_dword(m, n, c);
    }
  }
}

// DAZ on an input, FTZ on a result: a denormal becomes a zero of its sign.
float flushed(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

float from_bf16(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
uint16_t to_bf16(float x) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16); }

// The SDM's TDPBF16PS: per C element, temp1.fp32[2n] and [2n+1] accumulate
// the even and the odd bf16 products by FMA (DAZ, FTZ, round to nearest
// even), then C := C + (temp1[2n] + temp1[2n+1]).
void reference_bf16(Product& p) {
  for (int m = 0; m < p.m; ++m) {
    std::vector<float> temp(static_cast<size_t>(2 * p.n), 0.0f);
    for (int k = 0; k < p.k; ++k) {
      for (int n = 0; n < p.n; ++n) {
        for (int j = 0; j < 2; ++j) {
          float x = flushed(from_bf16(p.a.bf16(m, 2 * k + j)));
          float y = flushed(from_bf16(p.b.bf16(k, 2 * n + j)));
          temp[2 * n + j] = flushed(std::fma(x, y, temp[2 * n + j]));
        }
      }
    }
    for (int n = 0; n < p.n; ++n) {
      float pair = flushed(temp[2 * n] + temp[2 * n + 1]);
      p.c.set_dword(m, n, std::bit_cast<uint32_t>(flushed(flushed(p.c.fp32(m, n)) + pair)));
    }
  }
}

struct Shape {
  int m, n, k;  // C rows, C dwords a row, dwords summed (A's dwords a row)
};

// Tile shapes from full (16 x 16, K 16) to single elements, K of 8 and 16
// dwords among them.
const Shape kShapes[] = {{16, 16, 16}, {16, 16, 8}, {5, 3, 8},  {1, 1, 1},   {13, 7, 16},
                         {16, 1, 16},  {1, 16, 8},  {7, 16, 3}, {11, 9, 12}, {3, 5, 16}};

// Pads that make each stride differ from the row's colsb, some not a
// multiple of 4.
Product random_product(const Shape& s, int variant, std::mt19937& rng) {
  return Product(s.m, s.n, s.k, 7 + variant % 5, 3 + 4 * (variant % 3), 12 + variant % 2, rng);
}

// "" when `got` and `want` hold the same bytes, else where they first differ.
std::string first_difference(const Matrix& got, const Matrix& want) {
  for (size_t i = 0; i < got.bytes.size(); ++i) {
    if (got.bytes[i] != want.bytes[i]) {
      return "row " + std::to_string(i / got.stride) + " byte " + std::to_string(i % got.stride) + ": " +
             std::to_string(got.bytes[i]) + " where " + std::to_string(want.bytes[i]) + " was due";
    }
  }
  return "";
}

std::string shape_name(const Product& p) {
  return "M " + std::to_string(p.m) + " N " + std::to_string(p.n) + " K " + std::to_string(p.k) + ", strides " +
         std::to_string(p.a.stride) + "/" + std::to_string(p.b.stride) + "/" + std::to_string(p.c.stride);
}

TEST(AmxEmulator, Int8ProductsMatchTheSdmPseudocode) {
  AmxEmulator emulator;
  std::mt19937 rng(1);
  int variant = 0;
  for (const Int8Op& op : kInt8Ops) {
    for (const Shape& shape : kShapes) {
      Product p = random_product(shape, variant++, rng);
      SCOPED_TRACE(std::string(op.mnemonic) + ", " + shape_name(p));
      Product expected = p;
      reference_int8(op.a_signed, op.b_signed, expected);
      ASSERT_NE(expected.c.bytes, p.c.bytes) << "the reference left C as it was";
      op.kernel(product_config(p, op.tc, op.ta, op.tb), operands(p));
      // All of C's storage: the elements, and the bytes between rows that
      // TILESTORED must leave alone.
      ASSERT_EQ(first_difference(p.c, expected.c), "");
    }
  }
}

TEST(AmxEmulator, Int32AccumulationWrapsAround) {
  AmxEmulator emulator;
  std::mt19937 rng(2);
  for (const Int8Op& op : kInt8Ops) {
    SCOPED_TRACE(op.mnemonic);
    Product p(2, 2, 16, 4, 4, 4, rng);
    // A's row 0 and B's column 0 hold the largest bytes, A's row 1 and B's
    // column 1 the smallest: 64 products of each sign that push C past the
    // int32 range.
    uint8_t big_a = op.a_signed ? 127 : 255, small_a = op.a_signed ? 0x80 : 1;
    uint8_t big_b = op.b_signed ? 127 : 255, small_b = op.b_signed ? 0x80 : 1;
    for (int i = 0; i < 64; ++i) {
      p.a.row(0)[i] = big_a;
      p.a.row(1)[i] = small_a;
    }
    for (int k = 0; k < 16; ++k) {
      std::memset(p.b.row(k), big_b, 4);
      std::memset(p.b.row(k) + 4, small_b, 4);
    }
    const int32_t c[2][2] = {{INT32_MAX - 100, INT32_MIN + 100}, {INT32_MIN + 5, INT32_MAX}};
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 2; ++n) p.c.set_dword(m, n, static_cast<uint32_t>(c[m][n]));
    op.kernel(product_config(p, op.tc, op.ta, op.tb), operands(p));
    auto value = [](uint8_t byte, bool is_signed) -> int64_t { return is_signed ? int8_t(byte) : byte; };
    const uint8_t a_bytes[2] = {big_a, small_a}, b_bytes[2] = {big_b, small_b};
    for (int m = 0; m < 2; ++m) {
      for (int n = 0; n < 2; ++n) {
        int64_t exact = c[m][n] + 64 * value(a_bytes[m], op.a_signed) * value(b_bytes[n], op.b_signed);
        EXPECT_EQ(static_cast<int32_t>(p.c.dword(m, n)), static_cast<int32_t>(static_cast<uint32_t>(exact)))
            << "C[" << m << "][" << n << "], exact " << exact;
      }
    }
  }
}

TEST(AmxEmulator, Bf16ProductsMatchTheSdmPseudocode) {
  AmxEmulator emulator;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  int variant = 0;
  for (const Shape& shape : kShapes) {
    Product p = random_product(shape, variant++, rng);
    SCOPED_TRACE(shape_name(p));
    for (int m = 0; m < p.m; ++m) {
      for (int i = 0; i < 2 * p.k; ++i) p.a.set_bf16(m, i, to_bf16(value(rng)));
      for (int n = 0; n < p.n; ++n) p.c.set_dword(m, n, std::bit_cast<uint32_t>(value(rng)));
    }
    for (int k = 0; k < p.k; ++k)
      for (int i = 0; i < 2 * p.n; ++i) p.b.set_bf16(k, i, to_bf16(value(rng)));
    Product expected = p;
    reference_bf16(expected);
    product_bf16(product_config(p, 5, 3, 6), operands(p));
    ASSERT_EQ(first_difference(p.c, expected.c), "");
  }
}

// One-element TDPBF16PS cases whose results differ when denormal inputs are
// not read as zero or denormal results not flushed, checked against values
// worked out by hand. A holds (a0, a1) per dword, B (b0, b1).
TEST(AmxEmulator, Bf16ReadsDenormalsAsZeroAndFlushesThem) {
  AmxEmulator emulator;
  std::mt19937 rng(4);
  const float p63 = std::ldexp(1.0f, -63);
  const float min_normal = std::ldexp(1.0f, -126);
  struct Case {
    const char* what;
    float c;
    uint16_t a[4], b[4];  // dwords k = 0, 1 of A's row and of B's column
    float expected;
  } cases[] = {
      // 2^-133 * 2^100 would be 2^-33.
      {"denormal bf16 input", 0.0f, {0x0001, 0, 0, 0}, {to_bf16(std::ldexp(1.0f, 100)), 0, 0, 0}, 0.0f},
      // C = 2^-149 read as 0: 0 + 2^-126, not 2^-126 + 2^-149.
      {"denormal C", std::ldexp(1.0f, -149), {to_bf16(p63), 0, 0, 0}, {to_bf16(p63), 0, 0, 0}, min_normal},
      // 2^-70 * 2^-60 = 2^-130 flushed before 1.5 * 2^-126 is added: not
      // 1.5625 * 2^-126.
      {"denormal partial sum",
       0.0f,
       {to_bf16(std::ldexp(1.0f, -70)), 0, to_bf16(1.5f * p63), 0},
       {to_bf16(std::ldexp(1.0f, -60)), 0, to_bf16(p63), 0},
       1.5f * min_normal},
      // 1.5 * 2^-126 - 1.25 * 2^-126 = 2^-128 is a denormal result: +0.
      {"denormal result", 1.5f * min_normal, {to_bf16(-1.25f * p63), 0, 0, 0}, {to_bf16(p63), 0, 0, 0}, 0.0f},
      // The odd products have their own partial sum: (1 + 2^-24) would round
      // to 1 in one sum, but 2^-24 + 2^-24 survives in the other.
      {"even and odd partial sums",
       0.0f,
       {to_bf16(1.0f), to_bf16(std::ldexp(1.0f, -24)), 0, to_bf16(std::ldexp(1.0f, -24))},
       {to_bf16(1.0f), to_bf16(1.0f), 0, to_bf16(1.0f)},
       1.0f + std::ldexp(1.0f, -23)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Product p(1, 1, 2, 0, 0, 0, rng);
    for (int k = 0; k < 2; ++k) {
      p.a.set_bf16(0, 2 * k, c.a[2 * k]);
      p.a.set_bf16(0, 2 * k + 1, c.a[2 * k + 1]);
      p.b.set_bf16(k, 0, c.b[2 * k]);
      p.b.set_bf16(k, 1, c.b[2 * k + 1]);
    }
    p.c.set_dword(0, 0, std::bit_cast<uint32_t>(c.c));
    Product expected = p;
    reference_bf16(expected);
    EXPECT_EQ(expected.c.dword(0, 0), std::bit_cast<uint32_t>(c.expected)) << "the reference";
    product_bf16(product_config(p, 5, 3, 6), operands(p));
    EXPECT_EQ(p.c.dword(0, 0), std::bit_cast<uint32_t>(c.expected)) << p.c.fp32(0, 0) << " for " << c.expected;
  }
}

// C (32 x 32 int32) = A (32 x 16 * kBlocks dwords, u8) x B (s8) in 2 x 2
// tiles, as a GEMM kernel blocks it: C in tmm0, tmm1, tmm6, tmm7, A in tmm2
// and tmm5, B in tmm3 and tmm4, so every register is used; C accumulates over
// kBlocks TDPBUSDs each.
QINFER_AMX_KERNEL void gemm_32x32(const uint8_t* a, long a_stride, const int8_t* b, long b_stride, int32_t* c,
                                  long c_stride, int blocks) {
  memory_barrier();
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.tile(t, 16, 64);
  memory_barrier();
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(6);
  _tile_zero(7);
  for (int kb = 0; kb < blocks; ++kb) {
    _tile_loadd(2, a + 64 * kb, a_stride);
    _tile_loadd(5, a + 16 * a_stride + 64 * kb, a_stride);
    _tile_loadd(3, b + 16 * kb * b_stride, b_stride);
    _tile_stream_loadd(4, b + 16 * kb * b_stride + 64, b_stride);
    _tile_dpbusd(0, 2, 3);
    _tile_dpbusd(1, 2, 4);
    _tile_dpbusd(6, 5, 3);
    _tile_dpbusd(7, 5, 4);
  }
  _tile_stored(0, c, c_stride);
  _tile_stored(1, c + 16, c_stride);
  _tile_stored(6, reinterpret_cast<uint8_t*>(c) + 16 * c_stride, c_stride);
  _tile_stored(7, reinterpret_cast<uint8_t*>(c + 16) + 16 * c_stride, c_stride);
  _tile_release();
}

// Runs gemm_32x32 on random data and checks it against reference_int8.
bool gemm_matches_reference(int blocks, std::mt19937& rng) {
  Product p(32, 32, 16 * blocks, 16, 8, 0, rng);
  for (int m = 0; m < 32; ++m)
    for (int n = 0; n < 32; ++n) p.c.set_dword(m, n, 0);
  Product expected = p;
  reference_int8(false, true, expected);
  gemm_32x32(p.a.bytes.data(), p.a.stride, reinterpret_cast<const int8_t*>(p.b.bytes.data()), p.b.stride,
             reinterpret_cast<int32_t*>(p.c.bytes.data()), p.c.stride, blocks);
  return first_difference(p.c, expected.c).empty();
}

TEST(AmxEmulator, AccumulatesOverAGemmInAllEightTiles) {
  AmxEmulator emulator;
  std::mt19937 rng(5);
  for (int blocks : {1, 4}) EXPECT_TRUE(gemm_matches_reference(blocks, rng)) << blocks << " blocks of K";
}

QINFER_AMX_KERNEL void load_tile_3(const void* base, long stride) {
  memory_barrier();
  _tile_loadd(3, base, stride);
}
QINFER_AMX_KERNEL void store_tile_3(void* base, long stride) {
  _tile_stored(3, base, stride);
  memory_barrier();
}

TEST(AmxEmulator, StridesMayBeZeroOrNegative) {
  AmxEmulator emulator;
  std::mt19937 rng(6);
  Matrix source(1, 4096, 4096, rng);
  for (long stride : {0L, -80L, 67L}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    load_config(TileConfig().tile(3, 5, 20));
    const uint8_t* base = source.row(0) + 2000;
    load_tile_3(base, stride);
    uint8_t out[5][20];
    store_tile_3(out, sizeof out[0]);
    release_tiles();
    for (int r = 0; r < 5; ++r) EXPECT_EQ(std::memcmp(out[r], base + r * stride, 20), 0) << "row " << r;
  }
}

TEST(AmxEmulator, ConfigurationRoundTripsAndReleaseClearsIt) {
  AmxEmulator emulator;
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.tile(t, 16 - t, 64 - 4 * t);
  load_config(config);
  TileConfig stored;
  store_config(&stored);
  EXPECT_EQ(std::memcmp(&stored, &config, 64), 0);

  const uint8_t zeros[64] = {};
  release_tiles();
  store_config(&stored);
  EXPECT_EQ(std::memcmp(&stored, zeros, 64), 0) << "after TILERELEASE";

  // Palette 0 is the INIT state whatever the other bytes say.
  load_config(config);
  TileConfig palette0 = config;
  palette0.palette = 0;
  palette0.reserved_2_15[3] = 9;
  load_config(palette0);
  store_config(&stored);
  EXPECT_EQ(std::memcmp(&stored, zeros, 64), 0) << "after LDTILECFG of palette 0";
}

// tilecfg.start_row is where an interrupted load or store resumes: a load
// starts there, leaving the rows above, and resets it to 0.
TEST(AmxEmulator, LoadsResumeAtStartRow) {
  AmxEmulator emulator;
  std::mt19937 rng(7);
  Matrix source(4, 8, 8, rng);
  TileConfig config;
  config.tile(3, 4, 8).start_row = 2;
  load_config(config);
  TileConfig stored;
  store_config(&stored);
  EXPECT_EQ(stored.start_row, 2);
  load_tile_3(source.bytes.data(), 8);
  uint8_t out[4][8];
  std::memset(out, 0xEE, sizeof out);
  store_tile_3(out, 8);
  release_tiles();
  const uint8_t zeros[8] = {};
  EXPECT_EQ(std::memcmp(out[0], zeros, 8), 0);
  EXPECT_EQ(std::memcmp(out[1], zeros, 8), 0);
  EXPECT_EQ(std::memcmp(out[2], source.row(2), 8), 0);
  EXPECT_EQ(std::memcmp(out[3], source.row(3), 8), 0);
}

QINFER_AMX_KERNEL void zero_tile_4() { _tile_zero(4); }
QINFER_AMX_KERNEL void dpbssd_0_1_2() { _tile_dpbssd(0, 1, 2); }
QINFER_AMX_KERNEL void dpbf16ps_5_6_7() { _tile_dpbf16ps(5, 6, 7); }

constexpr int kTileBytes = 16 * 64;

// A copy of the calling thread's emulated tile registers as a Matrix of 128
// rows (16 a tile) of 64 bytes.
Matrix emulated_tiles(std::mt19937& rng) {
  Matrix tiles(128, 64, 64, rng);
  std::memcpy(tiles.bytes.data(), AmxEmulator::emulated_tile_data(), 8 * kTileBytes);
  return tiles;
}

// The SDM zeroes what lies outside the configured shape (write_row_and_zero,
// zero_upper_rows, TILEZERO's whole register, LDTILECFG and TILERELEASE's all
// data), which no AMX instruction can observe: the emulator's tile data is
// planted with noise and read back directly.
TEST(AmxEmulator, ZeroesWhatLiesOutsideTheShape) {
  AmxEmulator emulator;
  if (!emulator.emulated()) GTEST_SKIP() << "the CPU runs AMX: its tile registers are out of reach";
  std::mt19937 rng(8);
  unsigned char* data = AmxEmulator::emulated_tile_data();
  auto plant_noise = [&] {
    for (int i = 0; i < 8 * kTileBytes; ++i) data[i] = static_cast<unsigned char>(rng() | 1);
  };
  auto tile_is_zero_outside = [&](int tmm, int rows, int colsb) {
    for (int r = 0; r < 16; ++r)
      for (int b = (r < rows ? colsb : 0); b < 64; ++b)
        if (data[tmm * kTileBytes + r * 64 + b] != 0) return false;
    return true;
  };

  plant_noise();
  TileConfig config;
  config.tile(0, 5, 12).tile(1, 5, 32).tile(2, 8, 12).tile(3, 3, 20).tile(4, 2, 8);
  config.tile(5, 2, 8).tile(6, 2, 4).tile(7, 1, 8);
  load_config(config);
  for (int tmm = 0; tmm < 8; ++tmm) EXPECT_TRUE(tile_is_zero_outside(tmm, 0, 0)) << "LDTILECFG, tmm" << tmm;

  plant_noise();
  // Tiles 5-7 feed TDPBF16PS: their bytes' top exponent bits cleared, every
  // bf16 and fp32 is finite (NaN payloads are not compared) and below 2,
  // denormals among them.
  for (int i = 5 * kTileBytes + 1; i < 8 * kTileBytes; i += 2) data[i] &= 0xBF;
  Matrix before = emulated_tiles(rng);
  Matrix source(3, 20, 20, rng);
  load_tile_3(source.bytes.data(), 20);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(std::memcmp(data + 3 * kTileBytes + r * 64, source.row(r), 20), 0);
  EXPECT_TRUE(tile_is_zero_outside(3, 3, 20)) << "TILELOADD";

  // TDPBSSD tmm0 (5 x 3 dwords) += tmm1 (5 x 8) x tmm2 (8 x 3) on the noise.
  Product p(5, 3, 8, 64 - 32, 64 - 12, 64 - 12, rng);
  std::memcpy(p.c.bytes.data(), data + 0 * kTileBytes, 5 * 64);
  std::memcpy(p.a.bytes.data(), data + 1 * kTileBytes, 5 * 64);
  std::memcpy(p.b.bytes.data(), data + 2 * kTileBytes, 8 * 64);
  reference_int8(true, true, p);
  dpbssd_0_1_2();
  for (int m = 0; m < 5; ++m) EXPECT_EQ(std::memcmp(data + m * 64, p.c.row(m), 12), 0) << "row " << m;
  EXPECT_TRUE(tile_is_zero_outside(0, 5, 12)) << "TDPBSSD";
  EXPECT_EQ(std::memcmp(data + kTileBytes, before.row(16), 2 * kTileBytes), 0) << "TDPBSSD's sources changed";

  // TDPBF16PS tmm5 (2 x 2 dwords) += tmm6 (2 x 1) x tmm7 (1 x 2).
  Product q(2, 2, 1, 64 - 4, 64 - 8, 64 - 8, rng);
  std::memcpy(q.c.bytes.data(), data + 5 * kTileBytes, 2 * 64);
  std::memcpy(q.a.bytes.data(), data + 6 * kTileBytes, 2 * 64);
  std::memcpy(q.b.bytes.data(), data + 7 * kTileBytes, 1 * 64);
  reference_bf16(q);
  dpbf16ps_5_6_7();
  for (int m = 0; m < 2; ++m) EXPECT_EQ(std::memcmp(data + 5 * kTileBytes + m * 64, q.c.row(m), 8), 0);
  EXPECT_TRUE(tile_is_zero_outside(5, 2, 8)) << "TDPBF16PS";

  zero_tile_4();
  EXPECT_TRUE(tile_is_zero_outside(4, 0, 0)) << "TILEZERO";

  plant_noise();
  release_tiles();
  for (int tmm = 0; tmm < 8; ++tmm) EXPECT_TRUE(tile_is_zero_outside(tmm, 0, 0)) << "TILERELEASE, tmm" << tmm;
}

// Addressing forms the decoder must handle, each in its own instruction:
// bases and indexes r8-r15 (VEX.B, VEX.X), scales 1-8, disp8 (negative too)
// and disp32, base r13 (needing mod 01), base r12 and rsp (needing a SIB),
// index r12 (SIB index 100 with VEX.X set: a register, not "no index"), no
// index (stride 0), no base with a disp32, RIP-relative and SIB-indexed
// LDTILECFG/STTILECFG.
TileConfig g_rip_relative_config;
TileConfig g_rip_relative_stored;

QINFER_AMX_KERNEL void load_config_rip_relative() {
  asm volatile("ldtilecfg %0" ::"m"(g_rip_relative_config) : "memory");
}
QINFER_AMX_KERNEL void store_config_rip_relative() {
  asm volatile("sttilecfg %0" : "=m"(g_rip_relative_stored)::"memory");
}
// LDTILECFG at base + 0x40 + index * 2.
QINFER_AMX_KERNEL void load_config_sib(const void* base, long index) {
  asm volatile("mov %0, %%r9\n\tmov %1, %%r10\n\tldtilecfg 0x40(%%r9,%%r10,2)" ::"r"(base), "r"(index)
               : "r9", "r10", "memory");
}
// STTILECFG at base - 8.
QINFER_AMX_KERNEL void store_config_r14(void* base) {
  asm volatile("mov %0, %%r14\n\tsttilecfg -0x8(%%r14)" ::"r"(base) : "r14", "memory");
}

// Each form loads one tile register from an address the instruction computes
// from `base` (an address, possibly outside any object until the displacement
// is added) and `index`.
#define QINFER_DEFINE_LOAD_FORM(name, setup, instruction, ...)                              \
  QINFER_AMX_KERNEL void name(uintptr_t base, long index) {                                 \
    asm volatile(setup "\n\t" instruction ::"r"(base), "r"(index) : __VA_ARGS__, "memory"); \
  }

QINFER_DEFINE_LOAD_FORM(load_r8_r9, "mov %0, %%r8\n\tmov %1, %%r9", "tileloadd (%%r8,%%r9,1), %%tmm0", "r8", "r9")
QINFER_DEFINE_LOAD_FORM(load_r15_r14_disp8, "mov %0, %%r15\n\tmov %1, %%r14", "tileloadd 0x7f(%%r15,%%r14,2), %%tmm1",
                        "r15", "r14")
QINFER_DEFINE_LOAD_FORM(load_rax_r12_negative_disp8, "mov %0, %%rax\n\tmov %1, %%r12",
                        "tileloadd -0x80(%%rax,%%r12,4), %%tmm2", "rax", "r12")
QINFER_DEFINE_LOAD_FORM(load_r13_rcx_disp32, "mov %0, %%r13\n\tmov %1, %%rcx",
                        "tileloadd 0x12345(%%r13,%%rcx,8), %%tmm3", "r13", "rcx")
QINFER_DEFINE_LOAD_FORM(load_r13_rdx, "mov %0, %%r13\n\tmov %1, %%rdx", "tileloaddt1 (%%r13,%%rdx,1), %%tmm4", "r13",
                        "rdx")
QINFER_DEFINE_LOAD_FORM(load_r12_no_index, "mov %0, %%r12", "tileloadd 0x10(%%r12), %%tmm5", "r12")

// TILELOADD tmm6 with rsp as its base: the rows (stride `index`, 4 rows of
// 16 bytes) are copied to an aligned area of the stack first, well below the
// red zone.
QINFER_AMX_KERNEL void load_rsp_base(uintptr_t base, long index) {
  asm volatile(
      "mov %%rsp, %%rbx\n\t"
      "sub $1024, %%rsp\n\t"
      "and $-64, %%rsp\n\t"
      "mov %%rsp, %%rdi\n\t"
      "mov %0, %%rsi\n\t"
      "mov $512, %%ecx\n\t"
      "rep movsb\n\t"
      "mov %1, %%rax\n\t"
      "tileloadd (%%rsp,%%rax,1), %%tmm6\n\t"
      "mov %%rbx, %%rsp" ::"r"(base),
      "r"(index)
      : "rax", "rbx", "rcx", "rsi", "rdi", "memory");
}

// A fixed low address, so that an instruction can hold it as a disp32 with
// no base register.
constexpr uintptr_t kLowAddress = 0x30000000;
QINFER_AMX_KERNEL void load_no_base_disp32(uintptr_t, long index) {
  asm volatile("mov %0, %%rsi\n\ttileloaddt1 0x30000040(,%%rsi,1), %%tmm7" ::"r"(index) : "rsi", "memory");
}

QINFER_AMX_KERNEL void store_tmm(int tmm, void* out) {
  memory_barrier();
  switch (tmm) {
    case 0:
      _tile_stored(0, out, 16);
      break;
    case 1:
      _tile_stored(1, out, 16);
      break;
    case 2:
      _tile_stored(2, out, 16);
      break;
    case 3:
      _tile_stored(3, out, 16);
      break;
    case 4:
      _tile_stored(4, out, 16);
      break;
    case 5:
      _tile_stored(5, out, 16);
      break;
    case 6:
      _tile_stored(6, out, 16);
      break;
    default:
      _tile_stored(7, out, 16);
      break;
  }
  memory_barrier();
}

// TILESTORED tmm0 at base - 0x10 + row * (index * 2).
QINFER_AMX_KERNEL void store_r11_r10_negative_disp8(uint8_t* base, long index) {
  asm volatile("mov %0, %%r11\n\tmov %1, %%r10\n\ttilestored %%tmm0, -0x10(%%r11,%%r10,2)" ::"r"(base), "r"(index)
               : "r11", "r10", "memory");
}

TEST(AmxEmulator, DecodesAddressingForms) {
  AmxEmulator emulator;
  std::mt19937 rng(9);

  // LDTILECFG RIP-relative, STTILECFG base + disp8; then LDTILECFG with a SIB
  // index, STTILECFG RIP-relative.
  TileConfig small;
  for (int t = 0; t < 8; ++t) small.tile(t, 2, 8);
  g_rip_relative_config = small;
  load_config_rip_relative();
  TileConfig stored;
  store_config_r14(reinterpret_cast<uint8_t*>(&stored) + 8);
  EXPECT_EQ(std::memcmp(&stored, &small, 64), 0) << "ldtilecfg x(%rip); sttilecfg -0x8(%r14)";
  TileConfig forms;
  for (int t = 0; t < 8; ++t) forms.tile(t, 4, 16);
  std::vector<uint8_t> config_area(256);
  std::memcpy(config_area.data() + 0x40 + 2 * 37, &forms, 64);
  load_config_sib(config_area.data(), 37);
  store_config_rip_relative();
  EXPECT_EQ(std::memcmp(&g_rip_relative_stored, &forms, 64), 0) << "ldtilecfg 0x40(%r9,%r10,2); sttilecfg x(%rip)";

  Matrix source(1, 8192, 8192, rng);
  uint8_t* low = static_cast<uint8_t*>(mmap(reinterpret_cast<void*>(kLowAddress), 4096, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
  bool have_low = low == reinterpret_cast<uint8_t*>(kLowAddress);
  if (low != MAP_FAILED && !have_low) munmap(low, 4096);  // a kernel that took the address as a hint
  if (have_low) std::memcpy(low, source.row(0) + 7000, 1024);
  const uint8_t* src = source.row(0);
  const uintptr_t at = reinterpret_cast<uintptr_t>(src);
  struct Form {
    const char* text;
    void (*load)(uintptr_t, long);
    int tmm;
    uintptr_t base;
    long index;
    const uint8_t* row0;  // where row 0 is read
    long stride;          // index << scale
  } load_forms[] = {
      {"tileloadd (%r8,%r9,1)", load_r8_r9, 0, at, 40, src, 40},
      {"tileloadd 0x7f(%r15,%r14,2)", load_r15_r14_disp8, 1, at + 100, 24, src + 227, 48},
      {"tileloadd -0x80(%rax,%r12,4)", load_rax_r12_negative_disp8, 2, at + 1000, 20, src + 872, 80},
      {"tileloadd 0x12345(%r13,%rcx,8)", load_r13_rcx_disp32, 3, at + 2000 - 0x12345, 9, src + 2000, 72},
      {"tileloaddt1 (%r13,%rdx,1)", load_r13_rdx, 4, at + 3000, 33, src + 3000, 33},
      {"tileloadd 0x10(%r12)", load_r12_no_index, 5, at + 4000, 99, src + 4016, 0},
      {"tileloadd (%rsp,%rax,1)", load_rsp_base, 6, at + 5000, 128, src + 5000, 128},
      {"tileloaddt1 0x30000040(,%rsi,1)", load_no_base_disp32, 7, 0, 24, src + 7000 + 0x40, 24},
  };
  for (const Form& form : load_forms) {
    SCOPED_TRACE(form.text);
    if (form.load == load_no_base_disp32 && !have_low) {
      std::printf("skipped %s: could not map 0x%lx\n", form.text, static_cast<unsigned long>(kLowAddress));
      continue;
    }
    form.load(form.base, form.index);
    uint8_t out[4][16];
    store_tmm(form.tmm, out);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(std::memcmp(out[r], form.row0 + r * form.stride, 16), 0) << "row " << r;
  }

  // TILESTORED of tmm0 (loaded above) with a negative disp8, base r11 and
  // index r10: only the 4 rows of 16 bytes change.
  std::vector<uint8_t> target(1024, 0xEE);
  std::vector<uint8_t> expected = target;
  for (int r = 0; r < 4; ++r) std::memcpy(expected.data() + 100 + r * 60, src + r * 40, 16);
  store_r11_r10_negative_disp8(target.data() + 116, 30);
  EXPECT_EQ(target, expected) << "tilestored %tmm0, -0x10(%r11,%r10,2)";
  release_tiles();
  if (have_low) munmap(low, 4096);
}

// Each thread configures its own shapes and loads its tiles, all wait, then
// each multiplies and stores: with the tile state shared rather than per
// thread, the other threads' configurations and loads would land in between.
QINFER_AMX_KERNEL void configure_and_load(const TileConfig& config, const TileOperands& o) {
  memory_barrier();
  _tile_loadconfig(&config);
  _tile_loadd(0, o.c, o.c_stride);
  _tile_loadd(1, o.a, o.a_stride);
  _tile_loadd(2, o.b, o.b_stride);
}
QINFER_AMX_KERNEL void multiply_and_store(const TileOperands& o) {
  _tile_dpbssd(0, 1, 2);
  _tile_stored(0, o.c, o.c_stride);
  _tile_release();
  memory_barrier();
}

TEST(AmxEmulator, ThreadsHaveTheirOwnTiles) {
  AmxEmulator emulator;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  std::barrier sync(kThreads);
  std::vector<int> mismatches(kThreads, 0);
  size_t before = AmxEmulator::instructions();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int round = 0; round < kRounds; ++round) {
        const Shape& shape = kShapes[(t + round) % std::size(kShapes)];
        Product p = random_product(shape, t, rng);
        Product expected = p;
        reference_int8(true, true, expected);
        TileOperands o = operands(p);
        configure_and_load(product_config(p, 0, 1, 2), o);
        sync.arrive_and_wait();
        multiply_and_store(o);
        if (!first_difference(p.c, expected.c).empty()) ++mismatches[t];
        if (!gemm_matches_reference(1 + round % 2, rng)) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  if (emulator.emulated()) {
    // Per round: 4 + 3 instructions, and the GEMM's 1 + 4 + 8 * blocks + 4 + 1.
    size_t expected = 0;
    for (int round = 0; round < kRounds; ++round) expected += 7 + 10 + 8 * (1 + round % 2);
    EXPECT_EQ(AmxEmulator::instructions() - before, kThreads * expected);
  }
}

TEST(AmxEmulator, CountsInstructions) {
  AmxEmulator emulator;
  std::mt19937 rng(10);
  Product p(3, 4, 5, 1, 2, 3, rng);
  size_t before = AmxEmulator::instructions();
  product_ssd(product_config(p, 0, 1, 2), operands(p));
  EXPECT_EQ(AmxEmulator::instructions() - before, emulator.emulated() ? 7u : 0u);
}

void marker_handler(int) {}

void (*current_sigill_handler())(int) {
  struct sigaction now = {};
  sigaction(SIGILL, nullptr, &now);
  return now.sa_handler;
}

TEST(AmxEmulator, RestoresThePreviousHandlerWhenTheLastOneGoes) {
  struct sigaction marker = {}, original = {};
  marker.sa_handler = marker_handler;
  sigaction(SIGILL, &marker, &original);
  {
    AmxEmulator outer;
    bool emulated = outer.emulated();
    EXPECT_EQ(current_sigill_handler() == marker_handler, !emulated);
    {
      AmxEmulator inner;
      EXPECT_EQ(current_sigill_handler() == marker_handler, !emulated);
    }
    EXPECT_EQ(current_sigill_handler() == marker_handler, !emulated) << "while the outer one lives";
  }
  EXPECT_EQ(current_sigill_handler(), marker_handler);
  sigaction(SIGILL, &original, nullptr);
}

// Death tests: what a real CPU faults on aborts with a message saying what is
// wrong. They need the emulator: on a CPU with AMX the fault is the
// hardware's, with no message to match.
#define QINFER_REQUIRE_EMULATION(emulator) \
  if (!(emulator).emulated()) GTEST_SKIP() << "the CPU runs AMX: faults are the hardware's"

TEST(AmxEmulatorDeathTest, InvalidConfigurationsAbort) {
  AmxEmulator emulator;
  QINFER_REQUIRE_EMULATION(emulator);
  TileConfig valid;
  valid.tile(0, 16, 64).tile(1, 1, 4);
  load_config(valid);  // a valid one is accepted
  release_tiles();
  struct Case {
    void (*spoil)(TileConfig&);
    const char* message;
  } cases[] = {
      {[](TileConfig& c) { c.palette = 2; },
       "LDTILECFG: palette 2 \\(only 0 and 1 exist\\) \\(a real CPU raises #GP\\)"},
      {[](TileConfig& c) { c.tile(3, 17, 64); }, "LDTILECFG: tile 3 has 17 rows \\(at most 16\\)"},
      {[](TileConfig& c) { c.tile(5, 1, 65); }, "LDTILECFG: tile 5 has colsb 65 \\(at most 64\\)"},
      {[](TileConfig& c) { c.reserved_2_15[5] = 1; }, "LDTILECFG: reserved byte 7 is 1, not 0"},
      {[](TileConfig& c) { c.reserved_32_47[0] = 4; }, "LDTILECFG: reserved byte 32 is 4, not 0"},
      {[](TileConfig& c) { c.reserved_56_63[7] = 255; }, "LDTILECFG: reserved byte 63 is 255, not 0"},
      {[](TileConfig& c) { c.tile(2, 4, 0); }, "LDTILECFG: tile 2 has rows 4 and colsb 0"},
      {[](TileConfig& c) { c.tile(6, 0, 8); }, "LDTILECFG: tile 6 has rows 0 and colsb 8"},
  };
  for (const Case& c : cases) {
    TileConfig config = valid;
    c.spoil(config);
    EXPECT_DEATH(load_config(config), c.message);
  }
}

QINFER_AMX_KERNEL void load_tile_0(const void* base) { _tile_loadd(0, base, 64); }
QINFER_AMX_KERNEL void load_tile_4(const void* base) { _tile_loadd(4, base, 64); }
QINFER_AMX_KERNEL void store_tile_1(void* base) { _tile_stored(1, base, 64); }
QINFER_AMX_KERNEL void zero_tile_2() { _tile_zero(2); }
QINFER_AMX_KERNEL void dpbuud_3_4_5() { _tile_dpbuud(3, 4, 5); }

TEST(AmxEmulatorDeathTest, TileInstructionsNeedAConfiguration) {
  AmxEmulator emulator;
  QINFER_REQUIRE_EMULATION(emulator);
  alignas(64) uint8_t buffer[16 * 64] = {};
  release_tiles();
  const char* unconfigured = "tiles are not configured on this thread.*\\(a real CPU raises #UD\\)";
  EXPECT_DEATH(load_tile_0(buffer), std::string("TILELOADD tmm0: ") + unconfigured);
  EXPECT_DEATH(store_tile_1(buffer), std::string("TILESTORED tmm1: ") + unconfigured);
  EXPECT_DEATH(zero_tile_2(), std::string("TILEZERO tmm2: ") + unconfigured);
  EXPECT_DEATH(dpbuud_3_4_5(), std::string("TDPBUUD tmm3, tmm4, tmm5: ") + unconfigured);

  load_config(TileConfig().tile(0, 16, 64).tile(1, 16, 64));
  EXPECT_DEATH(load_tile_4(buffer), "TILELOADD tmm4: tmm4 is not configured \\(rows 0, colsb 0\\)");
  release_tiles();
}

TEST(AmxEmulatorDeathTest, ProductShapesMustMultiply) {
  AmxEmulator emulator;
  QINFER_REQUIRE_EMULATION(emulator);
  struct Case {
    TileConfig config;
    const char* message;
  } cases[] = {
      {TileConfig().tile(0, 8, 64).tile(1, 16, 64).tile(2, 16, 64), "dest.rows != src1.rows"},
      {TileConfig().tile(0, 16, 64).tile(1, 16, 64).tile(2, 8, 64), "src1.colsb / 4 != src2.rows"},
      {TileConfig().tile(0, 16, 32).tile(1, 16, 64).tile(2, 16, 64), "dest.colsb != src2.colsb"},
      {TileConfig().tile(0, 16, 64).tile(1, 16, 30).tile(2, 7, 64), "tmm1 has colsb 30, not a multiple of 4"},
  };
  for (const Case& c : cases) {
    load_config(c.config);
    EXPECT_DEATH(dpbssd_0_1_2(), std::string("TDPBSSD tmm0, tmm1, tmm2: ") + c.message + ".*#UD");
  }
  load_config(TileConfig().tile(0, 16, 64).tile(1, 16, 64).tile(2, 8, 64));
  EXPECT_DEATH(dpbssd_0_1_2(),
               "src1.colsb / 4 != src2.rows \\(rows x colsb: tmm0 16x64 tmm1 16x64 tmm2 8x64\\) \\(a real CPU");
  release_tiles();
}

// Encodings compilers refuse to emit, as bytes.
QINFER_AMX_KERNEL void tdpbssd_tmm0_tmm0_tmm1() { asm volatile(".byte 0xc4, 0xe2, 0x73, 0x5e, 0xc0"); }
QINFER_AMX_KERNEL void tdpfp16ps_tmm0_tmm1_tmm2() { asm volatile(".byte 0xc4, 0xe2, 0x6b, 0x5c, 0xc1"); }
QINFER_AMX_KERNEL void tilerelease_vex_l1() { asm volatile(".byte 0xc4, 0xe2, 0x7c, 0x49, 0xc0"); }
QINFER_AMX_KERNEL void tilezero_vvvv_not_1111() { asm volatile(".byte 0xc4, 0xe2, 0x73, 0x49, 0xc0"); }
QINFER_AMX_KERNEL void tileloadd_without_sib(const void* base) {
  asm volatile("mov %0, %%rdi\n\t.byte 0xc4, 0xe2, 0x7b, 0x4b, 0x07" ::"r"(base) : "rdi", "memory");
}
QINFER_AMX_KERNEL void tileloadd_32bit_address(const void* base) {
  asm volatile("mov %0, %%rcx\n\txor %%edx, %%edx\n\ttileloadd (%%ecx,%%edx,1), %%tmm5" ::"r"(base)
               : "rcx", "rdx", "memory");
}

TEST(AmxEmulatorDeathTest, RejectsWhatItDoesNotEmulate) {
  AmxEmulator emulator;
  QINFER_REQUIRE_EMULATION(emulator);
  alignas(64) uint8_t buffer[16 * 64] = {};
  load_config(TileConfig().tile(0, 16, 64).tile(1, 16, 64).tile(5, 16, 64));
  EXPECT_DEATH(tdpbssd_tmm0_tmm0_tmm1(), "TDPBSSD tmm0, tmm0, tmm1: the three tiles must differ \\(a real CPU");
  EXPECT_DEATH(tdpfp16ps_tmm0_tmm1_tmm2(), "TDPFP16PS \\(AMX-FP16\\) is not emulated.*bytes: c4 e2 6b 5c c1\n");
  EXPECT_DEATH(tilerelease_vex_l1(), "VEX.W or VEX.L set on an AMX opcode");
  EXPECT_DEATH(tilezero_vvvv_not_1111(), "VEX.vvvv is not 1111b");
  EXPECT_DEATH(tileloadd_without_sib(buffer), "TILELOADD/TILESTORED without a SIB byte");
  EXPECT_DEATH(tileloadd_32bit_address(buffer), "an address-size prefix \\(67\\).*bytes: 67 c4 e2 7b 4b 2c 11");
  EXPECT_DEATH(asm volatile("ud2"), "SIGILL on an instruction that is not AMX.*bytes: 0f 0b");
  EXPECT_DEATH(raise(SIGILL), "SIGILL sent by a process");
  release_tiles();
}

TEST(AmxEmulatorDeathTest, LoadsMustStartInsideTheTile) {
  AmxEmulator emulator;
  QINFER_REQUIRE_EMULATION(emulator);
  alignas(64) uint8_t buffer[16 * 64] = {};
  TileConfig config;
  config.tile(0, 4, 64).start_row = 4;
  load_config(config);
  EXPECT_DEATH(load_tile_0(buffer), "TILELOADD tmm0: tilecfg.start_row 4 is not below the tile's 4 rows");
  release_tiles();
}

}  // namespace
}  // namespace qinfer::test

#endif  // defined(__x86_64__)
