// The SIGILL handler that performs AMX instructions in software: decoding (VEX
// prefix, ModRM, SIB, displacement), the architectural checks a real CPU makes
// and the SDM's operations on the faulting thread's tile state.
#if defined(__x86_64__)
#include "amx_emulator.h"

#include <cpuid.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

namespace qinfer::test {
namespace {

constexpr int kTileCount = 8;
constexpr int kMaxRows = 16;
constexpr int kRowBytes = 64;
// TMUL_MAXK (CPUID leaf 0x1E): the most dwords a TDP* sums over per element.
constexpr int kMaxK = 16;

struct TileShape {
  uint8_t rows;
  uint16_t colsb;
};

// One thread's AMX registers. All zero is the INIT state (tiles not
// configured, data zero), where a thread starts on hardware too.
struct AmxState {
  bool configured;
  uint8_t start_row;
  TileShape shapes[kTileCount];
  alignas(64) uint8_t tiles[kTileCount][kMaxRows][kRowBytes];

  void init() { std::memset(static_cast<void*>(this), 0, sizeof *this); }
  void zero_tile_data() { std::memset(tiles, 0, sizeof tiles); }
};

// initial-exec: the handler reaches its thread's state with a plain
// %fs-relative access, never through __tls_get_addr, which may allocate.
thread_local AmxState tls_amx __attribute__((tls_model("initial-exec")));

std::atomic<size_t> emulated_instructions{0};

std::mutex install_mutex;
int installed_emulators = 0;  // guarded by install_mutex
struct sigaction previous_sigill;

// Text for stderr, built without allocating or stdio (neither is safe in a
// signal handler).
class Text {
 public:
  Text& operator<<(const char* s) {
    while (*s != '\0') put(*s++);
    return *this;
  }
  Text& operator<<(const Text& other) {
    for (size_t i = 0; i < other.length_; ++i) put(other.chars_[i]);
    return *this;
  }
  template <std::integral T>
  Text& operator<<(T value) {
    if constexpr (std::is_signed_v<T>) {
      if (value < 0) {
        put('-');
        return decimal(0 - static_cast<uint64_t>(value));
      }
    }
    return decimal(static_cast<uint64_t>(value));
  }
  Text& hex(uint64_t value, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int d = digits - 1; d >= 0; --d) put(kDigits[(value >> (4 * d)) & 15]);
    return *this;
  }
  const char* data() const { return chars_; }
  size_t size() const { return length_; }

 private:
  Text& decimal(uint64_t value) {
    char reversed[20];
    int n = 0;
    do {
      reversed[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (n > 0) put(reversed[--n]);
    return *this;
  }
  void put(char c) {
    if (length_ < sizeof chars_) chars_[length_++] = c;
  }
  char chars_[1024];
  size_t length_ = 0;
};

// Register numbers as instructions encode them (rax, rcx, rdx, rbx, rsp, rbp,
// rsi, rdi, r8..r15) mapped to their slots in mcontext's gregs, which are in
// another order.
constexpr int kGregOfRegister[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                                     REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

// The faulting instruction: its bytes, read one at a time as decoding needs
// them, and the interrupted thread's general registers.
class Instruction {
 public:
  Instruction(const uint8_t* rip, const greg_t* gregs) : rip_(rip), gregs_(gregs) {}

  uint8_t next_byte() { return rip_[length_++]; }
  int64_t next_disp8() { return static_cast<int8_t>(next_byte()); }
  int64_t next_disp32() {
    int32_t disp;
    std::memcpy(&disp, rip_ + length_, sizeof disp);
    length_ += sizeof disp;
    return disp;
  }
  // Called once every byte of the instruction has been read.
  void decoded() { decoded_ = true; }
  size_t length() const { return length_; }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(rip_); }
  uint64_t gpr(int number) const { return static_cast<uint64_t>(gregs_[kGregOfRegister[number]]); }

  // Writes "AmxEmulator: <why>", where the instruction is and its bytes to
  // stderr, and aborts.
  [[noreturn]] void reject(const Text& why) const {
    Text text;
    text << "AmxEmulator: " << why << "\n  at 0x";
    text.hex(address(), 16) << ", instruction bytes:";
    // Undecoded, the instruction's length is unknown: show up to the longest
    // AMX instruction (10 bytes), as far as the page that holds RIP (which is
    // mapped) goes.
    size_t shown = length_;
    if (!decoded_) {
      size_t to_page_end = 4096 - (address() & 4095);
      shown = to_page_end < 10 ? to_page_end : 10;
      if (shown < length_) shown = length_;
    }
    for (size_t i = 0; i < shown; ++i) (text << " ").hex(rip_[i], 2);
    text << "\n";
    write_all(text);
    abort();
  }

 private:
  static void write_all(const Text& text) {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = write(STDERR_FILENO, text.data() + done, text.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  const uint8_t* rip_;
  const greg_t* gregs_;
  size_t length_ = 0;
  bool decoded_ = false;
};

// The fields of a 3-byte VEX prefix (C4 xx xx), with the inverted ones
// (R, X, B, vvvv) turned back.
struct Vex {
  bool r, x, b;
  int map;  // mmmmm: 2 is 0F38
  bool w;
  int vvvv;  // a register number; 0 when the field is 1111b, as "no operand" must be
  bool l;
  int pp;  // implied prefix: 0 none, 1 66, 2 F3, 3 F2
};

enum Prefix { kNoPrefix = 0, k66 = 1, kF3 = 2, kF2 = 3 };

Vex decode_vex(Instruction& in) {
  uint8_t p1 = in.next_byte();
  uint8_t p2 = in.next_byte();
  return Vex{.r = (p1 & 0x80) == 0,
             .x = (p1 & 0x40) == 0,
             .b = (p1 & 0x20) == 0,
             .map = p1 & 0x1F,
             .w = (p2 & 0x80) != 0,
             .vvvv = (~p2 >> 3) & 15,
             .l = (p2 & 0x04) != 0,
             .pp = p2 & 3};
}

// A memory operand after ModRM: the address without the index, and the
// index register's value shifted by the scale (0 without an index).
struct MemoryOperand {
  uint64_t base_plus_disp;
  uint64_t scaled_index;
};

// Decodes the SIB byte and displacement of a ModRM memory operand (mod != 11):
// SIB when rm is 100 (so rsp and r12 as base); no base and a disp32 when SIB's
// base is 101 under mod 00 (so rbp and r13 as base need mod 01 or 10); index
// 100 with VEX.X clear meaning none; RIP-relative when rm is 101 under mod 00.
MemoryOperand decode_memory(Instruction& in, const Vex& vex, int mod, int rm) {
  MemoryOperand op{};
  if (rm == 4) {
    uint8_t sib = in.next_byte();
    int scale = sib >> 6;
    int index = ((sib >> 3) & 7) | (vex.x ? 8 : 0);
    if (index != 4) op.scaled_index = in.gpr(index) << scale;
    if ((sib & 7) == 5 && mod == 0) {
      op.base_plus_disp = static_cast<uint64_t>(in.next_disp32());
      return op;
    }
    op.base_plus_disp = in.gpr((sib & 7) | (vex.b ? 8 : 0));
  } else if (rm == 5 && mod == 0) {
    int64_t disp = in.next_disp32();
    // Relative to the next instruction; no immediate follows in AMX encodings.
    op.base_plus_disp = in.address() + in.length() + static_cast<uint64_t>(disp);
    return op;
  } else {
    op.base_plus_disp = in.gpr(rm | (vex.b ? 8 : 0));
  }
  if (mod == 1) op.base_plus_disp += static_cast<uint64_t>(in.next_disp8());
  if (mod == 2) op.base_plus_disp += static_cast<uint64_t>(in.next_disp32());
  return op;
}

void* pointer(uint64_t address) { return reinterpret_cast<void*>(static_cast<uintptr_t>(address)); }

// An instruction as messages name it: "TDPBSSD tmm0, tmm1, tmm2".
struct Operation {
  explicit Operation(const char* mnemonic_, int t0 = -1, int t1 = -1, int t2 = -1)
      : mnemonic(mnemonic_), tiles{t0, t1, t2} {}
  const char* mnemonic;
  int tiles[3];  // -1 past the operands
};

const char* const kUd = " (a real CPU raises #UD)";
const char* const kGp = " (a real CPU raises #GP)";

// Rejects `op` at `in`: "<op>: <problem><fault>".
[[noreturn]] void reject(const Instruction& in, const Operation& op, const Text& problem, const char* fault) {
  Text why;
  why << op.mnemonic;
  const char* separator = " ";
  for (int t : op.tiles) {
    if (t < 0) continue;
    why << separator << "tmm" << t;
    separator = ", ";
  }
  in.reject(why << ": " << problem << fault);
}

void require_configured(const Instruction& in, const AmxState& s, const Operation& op) {
  if (!s.configured) {
    reject(in, op,
           Text() << "tiles are not configured on this thread (no LDTILECFG of palette 1 since it started or "
                     "since TILERELEASE)",
           kUd);
  }
}

// A tile register an instruction names must exist and be configured.
void require_configured_tile(const Instruction& in, const AmxState& s, const Operation& op, int tmm) {
  if (tmm >= kTileCount) reject(in, op, Text() << "tmm" << tmm << " does not exist (tmm0-tmm7)", kUd);
  require_configured(in, s, op);
  if (s.shapes[tmm].rows == 0) reject(in, op, Text() << "tmm" << tmm << " is not configured (rows 0, colsb 0)", kUd);
}

// ... and, for loads, stores and TDP*, have rows of whole dwords.
void require_dword_rows(const Instruction& in, const AmxState& s, const Operation& op, int tmm) {
  require_configured_tile(in, s, op, tmm);
  if (s.shapes[tmm].colsb % 4 != 0) {
    reject(in, op, Text() << "tmm" << tmm << " has colsb " << s.shapes[tmm].colsb << ", not a multiple of 4", kUd);
  }
}

// LDTILECFG: the SDM's checks (any failing is #GP), then the new
// configuration with all tile data zeroed; palette 0 is the INIT state.
void load_tile_config(const Instruction& in, AmxState& s, uint64_t address) {
  uint8_t cfg[64];
  std::memcpy(cfg, pointer(address), sizeof cfg);
  const Operation op("LDTILECFG");
  uint8_t palette = cfg[0];
  if (palette == 0) {
    s.init();
    return;
  }
  if (palette != 1) reject(in, op, Text() << "palette " << palette << " (only 0 and 1 exist)", kGp);
  for (int i = 2; i < 64; ++i) {
    bool reserved = i < 16 || (i >= 32 && i < 48) || i >= 56;
    if (reserved && cfg[i] != 0) reject(in, op, Text() << "reserved byte " << i << " is " << cfg[i] << ", not 0", kGp);
  }
  TileShape shapes[kTileCount];
  for (int t = 0; t < kTileCount; ++t) {
    shapes[t].colsb = static_cast<uint16_t>(cfg[16 + 2 * t] | cfg[17 + 2 * t] << 8);
    shapes[t].rows = cfg[48 + t];
    if (shapes[t].colsb > kRowBytes) {
      reject(in, op, Text() << "tile " << t << " has colsb " << shapes[t].colsb << " (at most 64)", kGp);
    }
    if (shapes[t].rows > kMaxRows) {
      reject(in, op, Text() << "tile " << t << " has " << shapes[t].rows << " rows (at most 16)", kGp);
    }
    if ((shapes[t].rows == 0) != (shapes[t].colsb == 0)) {
      reject(in, op,
             Text() << "tile " << t << " has rows " << shapes[t].rows << " and colsb " << shapes[t].colsb
                    << " (an unused tile has both 0)",
             kGp);
    }
  }
  s.configured = true;
  s.start_row = cfg[1];
  std::memcpy(s.shapes, shapes, sizeof shapes);
  s.zero_tile_data();
}

// STTILECFG: the configuration as LDTILECFG reads it, or 64 zero bytes when
// tiles are not configured.
void store_tile_config(const AmxState& s, uint64_t address) {
  uint8_t cfg[64] = {};
  if (s.configured) {
    cfg[0] = 1;
    cfg[1] = s.start_row;
    for (int t = 0; t < kTileCount; ++t) {
      cfg[16 + 2 * t] = static_cast<uint8_t>(s.shapes[t].colsb);
      cfg[17 + 2 * t] = static_cast<uint8_t>(s.shapes[t].colsb >> 8);
      cfg[48 + t] = s.shapes[t].rows;
    }
  }
  std::memcpy(pointer(address), cfg, sizeof cfg);
}

// TILELOADD/TILESTORED's checks: a usable tile, and the row to start from
// (start_row, normally 0) inside it.
void require_loadable(const Instruction& in, const AmxState& s, const Operation& op, int tmm) {
  require_dword_rows(in, s, op, tmm);
  if (s.start_row >= s.shapes[tmm].rows) {
    reject(
        in, op,
        Text() << "tilecfg.start_row " << s.start_row << " is not below the tile's " << s.shapes[tmm].rows << " rows",
        kUd);
  }
}

// TILELOADD/TILELOADDT1: rows start_row..rows-1 from base + row * stride,
// each zero-filled past colsb; rows from start_row up are zeroed first.
void load_tile(const Instruction& in, AmxState& s, const char* mnemonic, int tmm, const MemoryOperand& mem) {
  require_loadable(in, s, Operation(mnemonic, tmm), tmm);
  const TileShape& shape = s.shapes[tmm];
  std::memset(s.tiles[tmm][s.start_row], 0, static_cast<size_t>(kMaxRows - s.start_row) * kRowBytes);
  for (int r = s.start_row; r < shape.rows; ++r) {
    uint64_t address = mem.base_plus_disp + static_cast<uint64_t>(r) * mem.scaled_index;
    std::memcpy(s.tiles[tmm][r], pointer(address), shape.colsb);
  }
  s.start_row = 0;
}

// TILESTORED: colsb bytes of rows start_row..rows-1 to base + row * stride.
void store_tile(const Instruction& in, AmxState& s, int tmm, const MemoryOperand& mem) {
  require_loadable(in, s, Operation("TILESTORED", tmm), tmm);
  const TileShape& shape = s.shapes[tmm];
  for (int r = s.start_row; r < shape.rows; ++r) {
    uint64_t address = mem.base_plus_disp + static_cast<uint64_t>(r) * mem.scaled_index;
    std::memcpy(pointer(address), s.tiles[tmm][r], shape.colsb);
  }
  s.start_row = 0;
}

// TILEZERO zeroes the whole register, not only the configured shape.
void zero_tile(const Instruction& in, AmxState& s, int tmm) {
  require_configured_tile(in, s, Operation("TILEZERO", tmm), tmm);
  std::memset(s.tiles[tmm], 0, sizeof s.tiles[tmm]);
  s.start_row = 0;
}

// The shape of C += A x B as TDP* multiplies tiles: C is M x N dwords, A is
// M x K dwords, B is K x N dwords (a dword being 4 bytes or 2 bf16).
struct ProductShape {
  int m, n, k;
};

// The TDP* checks: three different configured tiles whose shapes multiply
// within TMUL's limits.
ProductShape require_product_shapes(const Instruction& in, const AmxState& s, const Operation& op) {
  const int dest = op.tiles[0], src1 = op.tiles[1], src2 = op.tiles[2];
  if (dest == src1 || dest == src2 || src1 == src2) reject(in, op, Text() << "the three tiles must differ", kUd);
  for (int tmm : op.tiles) require_dword_rows(in, s, op, tmm);
  const TileShape& d = s.shapes[dest];
  const TileShape& a = s.shapes[src1];
  const TileShape& b = s.shapes[src2];
  auto reject_shapes = [&](const char* rule) {
    Text problem;
    problem << rule << " (rows x colsb:";
    for (int tmm : op.tiles) problem << " tmm" << tmm << " " << s.shapes[tmm].rows << "x" << s.shapes[tmm].colsb;
    reject(in, op, problem << ")", kUd);
  };
  if (d.rows != a.rows) reject_shapes("dest.rows != src1.rows");
  if (a.colsb / 4 != b.rows) reject_shapes("src1.colsb / 4 != src2.rows");
  if (d.colsb != b.colsb) reject_shapes("dest.colsb != src2.colsb");
  if (a.colsb / 4 > kMaxK) reject_shapes("src1.colsb / 4 > TMUL_MAXK (16)");
  return ProductShape{d.rows, d.colsb / 4, a.colsb / 4};
}

// What write_row_and_zero and zero_upper_rows leave around a TDP* result:
// bytes past N dwords of each of the M rows and all rows past M are zero.
void zero_outside(uint8_t (&tile)[kMaxRows][kRowBytes], const ProductShape& p) {
  for (int r = 0; r < kMaxRows; ++r) {
    int from = r < p.m ? p.n * 4 : 0;
    std::memset(tile[r] + from, 0, static_cast<size_t>(kRowBytes - from));
  }
}

int32_t byte_value(uint8_t byte, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(byte)) : static_cast<int32_t>(byte);
}

// TDPB[SU][SU]D: C[m][n] += the 4-byte dot products of A's dword (m, k) and
// B's dword (k, n) over k, in int32 arithmetic that wraps around.
template <bool kSigned1, bool kSigned2>
void dot_product_int8(AmxState& s, const ProductShape& p, int dest, int src1, int src2) {
  for (int m = 0; m < p.m; ++m) {
    uint32_t acc[kMaxRows];
    std::memcpy(acc, s.tiles[dest][m], static_cast<size_t>(p.n) * 4);
    const uint8_t* a = s.tiles[src1][m];
    for (int k = 0; k < p.k; ++k) {
      const uint8_t* b = s.tiles[src2][k];
      for (int n = 0; n < p.n; ++n) {
        for (int i = 0; i < 4; ++i) {
          acc[n] += static_cast<uint32_t>(byte_value(a[4 * k + i], kSigned1) * byte_value(b[4 * n + i], kSigned2));
        }
      }
    }
    std::memcpy(s.tiles[dest][m], acc, static_cast<size_t>(p.n) * 4);
  }
  zero_outside(s.tiles[dest], p);
}

// Denormals to zero of the same sign: TDPBF16PS reads its inputs so (DAZ) and
// writes its results so (FTZ).
float flush_denormal(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7F800000u) == 0) bits &= 0x80000000u;
  return std::bit_cast<float>(bits);
}

// The fp32 value of bf16 number `index` of a row (its upper 16 bits).
float bf16_at(const uint8_t* row, int index) {
  uint16_t bf16;
  std::memcpy(&bf16, row + 2 * index, sizeof bf16);
  return flush_denormal(std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16));
}

// TDPBF16PS, as the SDM's pseudocode: per C element an fp32 sum of the even
// bf16 products and one of the odd ones, each step a fused multiply-add; then
// C + (even + odd). Every step reads denormals as zero and flushes denormal
// results. std::fma rounds to nearest even here: a signal handler starts with
// the default MXCSR, and the instruction ignores MXCSR as this does.
void dot_product_bf16(AmxState& s, const ProductShape& p, int dest, int src1, int src2) {
  for (int m = 0; m < p.m; ++m) {
    float even[kMaxRows] = {};
    float odd[kMaxRows] = {};
    const uint8_t* a = s.tiles[src1][m];
    for (int k = 0; k < p.k; ++k) {
      const uint8_t* b = s.tiles[src2][k];
      for (int n = 0; n < p.n; ++n) {
        even[n] = flush_denormal(std::fma(bf16_at(a, 2 * k), bf16_at(b, 2 * n), even[n]));
        odd[n] = flush_denormal(std::fma(bf16_at(a, 2 * k + 1), bf16_at(b, 2 * n + 1), odd[n]));
      }
    }
    for (int n = 0; n < p.n; ++n) {
      float c;
      std::memcpy(&c, s.tiles[dest][m] + 4 * n, sizeof c);
      float pair = flush_denormal(even[n] + odd[n]);
      c = flush_denormal(flush_denormal(c) + pair);
      std::memcpy(s.tiles[dest][m] + 4 * n, &c, sizeof c);
    }
  }
  zero_outside(s.tiles[dest], p);
}

// TDPBF16PS (opcode 5C, F3) or TDPB[SU][SU]D (opcode 5E, the prefix naming
// the signedness): dest in ModRM.reg, src1 in ModRM.rm, src2 in VEX.vvvv.
void dot_product(const Instruction& in, AmxState& s, uint8_t opcode, int pp, int dest, int src1, int src2) {
  static constexpr const char* kInt8Mnemonics[4] = {"TDPBUUD", "TDPBUSD", "TDPBSUD", "TDPBSSD"};  // by pp
  const Operation op(opcode == 0x5C ? "TDPBF16PS" : kInt8Mnemonics[pp], dest, src1, src2);
  ProductShape p = require_product_shapes(in, s, op);
  if (opcode == 0x5C) {
    dot_product_bf16(s, p, dest, src1, src2);
  } else if (pp == kF2) {
    dot_product_int8<true, true>(s, p, dest, src1, src2);
  } else if (pp == kF3) {
    dot_product_int8<true, false>(s, p, dest, src1, src2);
  } else if (pp == k66) {
    dot_product_int8<false, true>(s, p, dest, src1, src2);
  } else {
    dot_product_int8<false, false>(s, p, dest, src1, src2);
  }
  s.start_row = 0;
}

// Decodes the instruction at RIP and performs it; rejects (aborting) whatever
// is not an AMX-TILE/INT8/BF16 instruction in a form a CPU would run. Returns
// the instruction's length.
size_t emulate(Instruction& in, AmxState& s) {
  uint8_t first = in.next_byte();
  if (first == 0x67) in.reject(Text() << "an address-size prefix (67): 32-bit addressing is not emulated");
  if (first == 0x64 || first == 0x65) in.reject(Text() << "a segment-override prefix (64/65): not emulated");
  if (first != 0xC4) {
    in.reject(Text() << "SIGILL on an instruction that is not AMX (AMX instructions start with the 3-byte VEX "
                        "prefix C4)");
  }
  Vex vex = decode_vex(in);
  uint8_t opcode = in.next_byte();
  bool amx_opcode = opcode == 0x49 || opcode == 0x4B || opcode == 0x5C || opcode == 0x5E;
  if (vex.map != 2 || !amx_opcode) {
    in.reject(Text() << "SIGILL on a VEX instruction that is not AMX (map 0F38 opcodes 49, 4B, 5C, 5E)");
  }
  if (vex.w || vex.l) in.reject(Text() << "VEX.W or VEX.L set on an AMX opcode" << kUd);
  uint8_t modrm = in.next_byte();
  int mod = modrm >> 6;
  int reg = ((modrm >> 3) & 7) | (vex.r ? 8 : 0);
  int rm = modrm & 7;
  int rm_extended = rm | (vex.b ? 8 : 0);
  // Only TDP* have a VEX.vvvv operand; elsewhere the field must be 1111b.
  bool has_vvvv_operand = opcode == 0x5C || opcode == 0x5E;
  if (!has_vvvv_operand && vex.vvvv != 0) in.reject(Text() << "VEX.vvvv is not 1111b" << kUd);

  if (opcode == 0x49 && mod == 3) {
    in.decoded();
    if (vex.pp == kNoPrefix && modrm == 0xC0 && !vex.b) {  // TILERELEASE
      s.init();
      return in.length();
    }
    if (vex.pp == kF2 && rm_extended == 0) {  // TILEZERO
      zero_tile(in, s, reg);
      return in.length();
    }
    in.reject(Text() << "a register form of opcode 49 other than TILERELEASE (NP, C0) and TILEZERO (F2, rm 000)"
                     << kUd);
  }
  if (opcode == 0x49) {  // LDTILECFG, STTILECFG
    if (reg != 0) in.reject(Text() << "LDTILECFG/STTILECFG with ModRM.reg not 000" << kUd);
    if (vex.pp != kNoPrefix && vex.pp != k66) {
      in.reject(Text() << "opcode 49 with prefix F2/F3 and a memory operand" << kUd);
    }
    MemoryOperand op = decode_memory(in, vex, mod, rm);
    in.decoded();
    uint64_t address = op.base_plus_disp + op.scaled_index;
    if (vex.pp == kNoPrefix) {
      load_tile_config(in, s, address);
    } else {
      store_tile_config(s, address);
    }
    return in.length();
  }
  if (opcode == 0x4B) {  // TILELOADD, TILELOADDT1, TILESTORED
    if (mod == 3) in.reject(Text() << "TILELOADD/TILESTORED with a register operand" << kUd);
    if (rm != 4) in.reject(Text() << "TILELOADD/TILESTORED without a SIB byte" << kUd);
    if (vex.pp == kNoPrefix) in.reject(Text() << "opcode 4B without a prefix (not an AMX-TILE instruction)");
    MemoryOperand op = decode_memory(in, vex, mod, rm);
    in.decoded();
    if (vex.pp == kF3) {
      store_tile(in, s, reg, op);
    } else {
      load_tile(in, s, vex.pp == kF2 ? "TILELOADD" : "TILELOADDT1", reg, op);
    }
    return in.length();
  }
  // TDP*: dest in ModRM.reg, src1 in ModRM.rm, src2 in VEX.vvvv.
  if (mod != 3) in.reject(Text() << "TDP* with a memory operand" << kUd);
  in.decoded();
  if (opcode == 0x5C && vex.pp != kF3) {
    in.reject(Text() << (vex.pp == kF2 ? "TDPFP16PS (AMX-FP16) is not emulated"
                                       : "opcode 5C with a prefix other than F3 (F2 is TDPFP16PS)"));
  }
  dot_product(in, s, opcode, vex.pp, reg, rm_extended, vex.vvvv);
  return in.length();
}

void on_sigill(int, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  greg_t* gregs = uc->uc_mcontext.gregs;
  Instruction in(reinterpret_cast<const uint8_t*>(gregs[REG_RIP]), gregs);
  if (info->si_code <= 0) {
    // kill, raise, tgkill: no instruction faulted, so there is nothing to
    // emulate.
    in.decoded();
    in.reject(Text() << "SIGILL sent by a process (si_code " << info->si_code << "), not raised by an instruction");
  }
  size_t length = emulate(in, tls_amx);
  gregs[REG_RIP] += static_cast<greg_t>(length);
  emulated_instructions.fetch_add(1, std::memory_order_relaxed);
}

// Asks Linux for permission to use the tile data state (needed once per
// process before the first tile instruction).
bool request_tile_permission() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

bool cpu_has_amx() {
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx >> 24 & 1) != 0 && (edx >> 25 & 1) != 0;
}

AmxEmulator::AmxEmulator() : emulated_(!(cpu_has_amx() && request_tile_permission())) {
  if (!emulated_) return;
  std::lock_guard<std::mutex> lock(install_mutex);
  if (installed_emulators++ > 0) return;
  struct sigaction action = {};
  action.sa_sigaction = on_sigill;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGILL, &action, &previous_sigill) != 0) abort();
}

AmxEmulator::~AmxEmulator() {
  if (!emulated_) return;
  std::lock_guard<std::mutex> lock(install_mutex);
  if (--installed_emulators > 0) return;
  sigaction(SIGILL, &previous_sigill, nullptr);
}

size_t AmxEmulator::instructions() { return emulated_instructions.load(std::memory_order_relaxed); }

unsigned char* AmxEmulator::emulated_tile_data() { return &tls_amx.tiles[0][0][0]; }

}  // namespace qinfer::test

#endif  // defined(__x86_64__)
