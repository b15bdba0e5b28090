// A software Intel AMX (AMX-TILE, AMX-INT8, AMX-BF16) for tests, so that
// kernels written with the _tile_* intrinsics run, and are checked, on x86-64
// hosts whose CPU has no AMX.
#pragma once
#if defined(__x86_64__)

#include <cstddef>

namespace qinfer::test {

// While an AmxEmulator lives, AMX-TILE/INT8/BF16 instructions run on a CPU
// without AMX: there each one raises #UD, which Linux delivers as SIGILL to the
// faulting thread; the handler decodes the instruction at the faulting RIP,
// performs it on that thread's software AMX state (TILECFG and 8 tiles of 16
// rows x 64 bytes, thread_local as the real registers are per thread) and
// resumes after it. The handler is process-wide, so kernels on a thread pool
// are emulated too, each thread with its own tiles.
//
// Emulated: LDTILECFG, STTILECFG, TILERELEASE, TILEZERO, TILELOADD,
// TILELOADDT1, TILESTORED, TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD and TDPBF16PS, as
// the Intel SDM's pseudocode for them says (tilecfg.start_row included).
// Where a real CPU faults the emulator writes what is wrong to stderr and
// aborts, since catching such kernel bugs is what it is for: an invalid
// configuration (#GP: palette other than 0 or 1, more than 16 rows or 64 bytes
// a row, non-zero reserved bytes, a tile with rows but no colsb or the
// reverse), a tile instruction with tiles not configured or naming an
// unconfigured tile (#UD), TDP* tiles that are not three different ones or
// whose shapes do not multiply (dest.rows == src1.rows, src1.colsb / 4 ==
// src2.rows, dest.colsb == src2.colsb, each colsb a multiple of 4), and
// TILELOADD/TILESTORED with start_row >= rows. It also aborts on anything it
// does not emulate (a non-AMX SIGILL, 32-bit addressing, another encoding)
// rather than guess. The colsb multiple-of-4 rule for loads and stores and the
// start_row rule follow Bochs (bochs/cpu/avx/amx.cc); the SDM's exception
// class tables (AMX-E3) were not at hand to confirm them. Tile loads and
// stores are memcpy calls, so AddressSanitizer reports a row read or written
// past the end of a buffer, which a real CPU would let pass.
//
// TDPBF16PS is the SDM's: per destination element two fp32 partial sums (even
// and odd bf16 of each pair), each updated by a fused multiply-add, then
// dest + (even + odd); round to nearest even, input denormals read as zero
// and denormal results flushed to zero, MXCSR neither read nor written. Not
// matched exactly: which NaN payload comes out, and a result that is tiny only
// before rounding (x86 flushes by tininess after rounding; here a result is
// flushed when its rounded value is denormal).
//
// On a CPU with AMX nothing is installed: the constructor asks the kernel for
// tile permission (arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023,
// XFEATURE_XTILEDATA = 18)) and the instructions run natively. Should the
// kernel refuse, the emulator is installed instead (the instructions would
// fault). Instances may overlap; the last one to go restores the SIGILL
// handler that was there before the first.
class AmxEmulator {
 public:
  AmxEmulator();
  ~AmxEmulator();
  AmxEmulator(const AmxEmulator&) = delete;
  AmxEmulator& operator=(const AmxEmulator&) = delete;

  // False when the CPU runs AMX itself.
  bool emulated() const { return emulated_; }
  // Instructions emulated so far, on all threads.
  static size_t instructions();
  // The calling thread's emulated tile registers, 8 x 16 rows x 64 bytes laid
  // out as XSAVE stores TILEDATA: lets a test plant and read what lies outside
  // the configured shapes, which no AMX instruction can reach.
  static unsigned char* emulated_tile_data();

 private:
  bool emulated_;
};

// Whether the CPU reports AMX-TILE and AMX-INT8 (CPUID.(EAX=7,ECX=0):EDX bits
// 24 and 25).
bool cpu_has_amx();

}  // namespace qinfer::test

#endif  // defined(__x86_64__)
