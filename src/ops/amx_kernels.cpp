// AMX-INT8 tiles for Q8/Q4 prefill (matmul_kernels.h). Not a Highway target:
// every CPU with AMX has AVX-512, so these functions are compiled for that ISA
// alone and called only where the CPU has it.
//
// Per 16 weight rows: their codes are rewritten once as B tiles (signed, one
// block per tile), then every 16 activation rows pass over them: per block
// one tdpbssd gives the 16 x 16 exact integer dots, which leave the tile
// through memory and are converted, scaled and accumulated as the vector
// kernels do (fma(float(dot), scale * d_x, acc), blocks in order).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/matmul_kernels.h"
#include "util/error.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 takes the deliberately undefined vector inside _mm512_cvtepi32_ps for
// a bug of the caller's.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace qinfer::kernels {

#if defined(__x86_64__)
namespace {

// Linux's request for a state component enabled per process
// (arch/x86/include/uapi/asm/prctl.h), and AMX's tile data component.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return static_cast<uint64_t>(hi) << 32 | lo;
}

// Why the tiles cannot be used on this machine, or "" where they can. The
// tile permission is the process's: asked once.
const std::string& unusable_reason() {
  static const std::string reason = []() -> std::string {
    unsigned a = 0, b = 0, c = 0, d = 0;
    // CPUID.(7,0):EDX[24] AMX-TILE, [25] AMX-INT8; AVX-512 F/BW/DQ/VL for the
    // conversions and sums around the tiles.
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return "the CPU has no AMX-INT8";
    if (!(b >> 16 & 1) || !(b >> 17 & 1) || !(b >> 30 & 1) || !(b >> 31 & 1)) return "the CPU has no AVX-512";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return "the OS does not use XSAVE";
    if ((xcr0() & (3u << 17)) != (3u << 17)) return "the OS does not enable the tile state (XCR0)";
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
      return std::string("the Linux kernel refused the tile state: ") + std::strerror(errno);
    const char* opt_in = std::getenv("QINFER_AMX");
    if (opt_in == nullptr || std::strcmp(opt_in, "1") != 0)
      return "off until measured on an AMX host: QINFER_AMX=1 turns it on";
    return "";
  }();
  return reason;
}

std::atomic<bool>& amx_on() {
  static std::atomic<bool> on{unusable_reason().empty()};
  return on;
}

// Around the tiles: AVX-512, which every AMX CPU has.
#define QINFER_AMX __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

// The tile instructions, written out rather than GCC 12's intrinsics: those
// tell the compiler neither that tileloadd reads memory nor that ldtilecfg
// reads all 64 bytes of its configuration, so it may drop or move the stores
// before them. Tile numbers are immediates; AT&T order (sources first).
#define QINFER_TILE_CONFIG(config) __asm__ volatile("ldtilecfg %0" ::"m"(config))
#define QINFER_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define QINFER_TILE_LOAD(t, base, stride) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define QINFER_TILE_STORE(t, base, stride) \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define QINFER_TILE_DPBSSD(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define QINFER_TILE_RELEASE() __asm__ volatile("tilerelease" ::)

// The tiles: C (the int32 dots) in 0 and 1, A (activation rows) in 2 and 3,
// B (weight codes) in 4 and 5: two blocks in flight.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);
constexpr size_t kAmxWeightRows = 16;  // a B tile row: 4 codes of 16 weight rows
constexpr size_t kBTileBytes = kQuantBlock / 4 * 64;

QINFER_AMX void configure_tiles() {
  TileConfig c{};
  c.palette = 1;
  for (int t : {0, 1}) {  // 16 activation rows x 16 weight rows of int32
    c.rows[t] = kAmxTileRows;
    c.colsb[t] = kAmxWeightRows * 4;
  }
  for (int t : {2, 3}) {  // 16 activation rows x one block of int8
    c.rows[t] = kAmxTileRows;
    c.colsb[t] = kQuantBlock;
  }
  for (int t : {4, 5}) {  // a block's 8 runs of 4 codes x 16 weight rows
    c.rows[t] = kQuantBlock / 4;
    c.colsb[t] = kAmxWeightRows * 4;
  }
  QINFER_TILE_CONFIG(c);
}

// 32 bytes at lo, then 32 at hi (or 32 copies of `absent` when hi is null).
QINFER_AMX inline __m512i join(const uint8_t* lo, const uint8_t* hi, char absent) {
  const __m256i h = hi != nullptr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)) : _mm256_set1_epi8(absent);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo))), h, 1);
}

// The groups of 8 weight rows at g0 and g1 (null: none, as zero weights) as
// B tiles: block b's tile at codes + b * kBTileBytes, its row c holding codes
// 4c..4c+3 of weight row j at 4j (quant.h's chunks, the two groups side by
// side) minus the zero code, so tdpbssd gives the dot with the signed
// weights; the 16 scales as f32 at scales + 16 b.
QINFER_AMX void pack_weight_tiles(QuantFormat f, const uint8_t* g0, const uint8_t* g1, size_t blocks, int8_t* codes,
                                  float* scales) {
  const size_t BB = quant_block_bytes(f);
  const __m512i flip = _mm512_set1_epi8(-128), low = _mm512_set1_epi8(15), eight = _mm512_set1_epi8(8);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* p0 = g0 + b * BB;
    const uint8_t* p1 = g1 != nullptr ? g1 + b * BB : nullptr;
    const __m256i h0 = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0)));
    const __m256i h = p1 != nullptr
                          ? _mm256_inserti128_si256(h0, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)), 1)
                          : _mm256_inserti128_si256(h0, _mm_setzero_si128(), 1);
    _mm512_storeu_ps(scales + b * kAmxWeightRows, _mm512_cvtph_ps(h));
    int8_t* tile = codes + b * kBTileBytes;
    if (f == QuantFormat::Q8) {
      for (size_t c = 0; c < 8; ++c) {
        const __m512i v = join(p0 + 16 + 32 * c, p1 != nullptr ? p1 + 16 + 32 * c : nullptr, -128);  // code 128: 0
        _mm512_storeu_si512(tile + 64 * c, _mm512_xor_si512(v, flip));
      }
    } else {  // chunk c: codes 8c..8c+3 in the low nibbles, 8c+4..8c+7 in the high ones
      for (size_t c = 0; c < 4; ++c) {
        const __m512i v = join(p0 + 16 + 32 * c, p1 != nullptr ? p1 + 16 + 32 * c : nullptr, -120);  // 0x88: 0, 0
        _mm512_storeu_si512(tile + 64 * (2 * c), _mm512_sub_epi8(_mm512_and_si512(v, low), eight));
        _mm512_storeu_si512(tile + 64 * (2 * c + 1),
                            _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), eight));
      }
    }
  }
}

// acc[i] = fma(float(dots[i]), scales * d[i * blocks], acc[i]) for the 16
// activation rows: a block's step of every output, as the vector kernels take it.
QINFER_AMX inline void accumulate(__m512 (&acc)[kAmxTileRows], const int32_t (&dots)[kAmxTileRows][kAmxWeightRows],
                                  const float* scales, const float* d, size_t blocks) {
  const __m512 s = _mm512_loadu_ps(scales);
  for (size_t i = 0; i < kAmxTileRows; ++i)
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(dots[i])),
                             _mm512_mul_ps(s, _mm512_set1_ps(d[i * blocks])), acc[i]);
}

// y[i * ldy + j] for the 16 activation rows at q (row-major, k wide; their
// scales at d, [row][block]) and the 16 weight rows packed at codes/scales;
// rows i < rows and j < nr stored.
QINFER_AMX void weight_tile(const int8_t* codes, const float* scales, size_t blocks, const int8_t* q, const float* d,
                            size_t k, size_t rows, float* y, size_t ldy, size_t nr) {
  __m512 acc[kAmxTileRows];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  alignas(64) int32_t dots[2][kAmxTileRows][kAmxWeightRows];
  size_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    QINFER_TILE_ZERO(0);
    QINFER_TILE_LOAD(2, q + b * kQuantBlock, k);
    QINFER_TILE_LOAD(4, codes + b * kBTileBytes, 64);
    QINFER_TILE_DPBSSD(0, 2, 4);
    QINFER_TILE_ZERO(1);
    QINFER_TILE_LOAD(3, q + (b + 1) * kQuantBlock, k);
    QINFER_TILE_LOAD(5, codes + (b + 1) * kBTileBytes, 64);
    QINFER_TILE_DPBSSD(1, 3, 5);
    QINFER_TILE_STORE(0, dots[0], 64);
    QINFER_TILE_STORE(1, dots[1], 64);
    accumulate(acc, dots[0], scales + b * kAmxWeightRows, d + b, blocks);
    accumulate(acc, dots[1], scales + (b + 1) * kAmxWeightRows, d + b + 1, blocks);
  }
  if (b < blocks) {
    QINFER_TILE_ZERO(0);
    QINFER_TILE_LOAD(2, q + b * kQuantBlock, k);
    QINFER_TILE_LOAD(4, codes + b * kBTileBytes, 64);
    QINFER_TILE_DPBSSD(0, 2, 4);
    QINFER_TILE_STORE(0, dots[0], 64);
    accumulate(acc, dots[0], scales + b * kAmxWeightRows, d + b, blocks);
  }
  const __mmask16 outputs = static_cast<__mmask16>((1u << nr) - 1);
  for (size_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(y + i * ldy, outputs, acc[i]);
}

QINFER_AMX void quant_dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1,
                               float* y, size_t ldy) {
  const size_t k = static_cast<size_t>(w.cols), blocks = k / kQuantBlock;
  const QuantFormat f = w.quant_format();
  const size_t group_bytes = blocks * quant_block_bytes(f);
  const auto* base = static_cast<const uint8_t*>(w.data);
  thread_local std::vector<int8_t> buffer;
  thread_local std::vector<float> scales;
  buffer.resize(blocks * kBTileBytes + 63);
  int8_t* const codes = buffer.data() + (-reinterpret_cast<uintptr_t>(buffer.data()) & 63);  // tile rows in one line
  scales.resize(blocks * kAmxWeightRows);
  configure_tiles();
  for (size_t r = r0; r < r1; r += kAmxWeightRows) {
    const uint8_t* g0 = base + r / kQuantGroupRows * group_bytes;
    pack_weight_tiles(f, g0, r + kQuantGroupRows < r1 ? g0 + group_bytes : nullptr, blocks, codes, scales.data());
    for (size_t m = 0; m < ni; m += kAmxTileRows)
      weight_tile(codes, scales.data(), blocks, a.q + (i0 + m) * k, a.d + (i0 + m) * blocks, k,
                  std::min(kAmxTileRows, ni - m), y + m * ldy + (r - r0), ldy, std::min(kAmxWeightRows, r1 - r));
  }
  QINFER_TILE_RELEASE();  // the tile state need not be saved at the next context switch
}

}  // namespace

bool amx_prefill() { return amx_on().load(std::memory_order_relaxed); }
const char* amx_status() { return unusable_reason().c_str(); }
void use_amx(bool on) { amx_on().store(on && unusable_reason().empty(), std::memory_order_relaxed); }
void force_amx_for_tests(bool on) { amx_on().store(on, std::memory_order_relaxed); }
void amx_quant_dot_rows(const WeightMatrix& w, const Activations& a, size_t i0, size_t ni, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  quant_dot_rows(w, a, i0, ni, r0, r1, y, ldy);
}
#else
bool amx_prefill() { return false; }
const char* amx_status() { return "not an x86-64 CPU"; }
void use_amx(bool) {}
void force_amx_for_tests(bool) {}
void amx_quant_dot_rows(const WeightMatrix&, const Activations&, size_t, size_t, size_t, size_t, float*, size_t) {
  fail("AMX tiles on a CPU that is not x86-64");
}
#endif

}  // namespace qinfer::kernels
