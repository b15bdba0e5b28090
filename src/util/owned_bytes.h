// A block of memory this process owns for the lifetime of a model (weights
// packed or converted at load, the KV pool): anonymous pages, zero until
// written, so the load writes each byte once (a std::vector zeroes it all
// first). Asked for
// as transparent huge pages (where the system leaves them to madvise, as
// Debian does): a fault maps 2 MiB instead of 4 KiB, so the load takes 512
// times fewer faults, and the weights need fewer TLB entries.
//
// Measured on a Zen 5 VM (the 0.6B, generate -n 1, six runs each): bf16
// 1.2-2.1 s against 1.8-2.2 s with 4 KiB pages, bf16 converted to q8
// 1.5-1.8 s against 2.0-2.3 s; with free memory cut into 4 KiB pieces, where
// the kernel compacts it first, bf16 1.1-2.0 s against 1.7-1.8 s. Decode
// speed was the same. An earlier host measured the opposite for bf16,
// 0.55-1.9 s against 0.59-0.74 s, its kernel compacting memory on demand.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer {

class OwnedBytes {
 public:
  OwnedBytes() = default;
  explicit OwnedBytes(size_t n) : OwnedBytes(n, false) {}
  // Address space for n bytes, none of it accounted as committed
  // (MAP_NORESERVE): for a pool sized for the worst case whose pages are
  // committed only as they are first written (the KV cache).
  static OwnedBytes reserve(size_t n) { return OwnedBytes(n, true); }
  ~OwnedBytes();
  OwnedBytes(OwnedBytes&& o) noexcept;
  OwnedBytes& operator=(OwnedBytes&& o) noexcept;
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  OwnedBytes(size_t n, bool reserve_only);
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace qinfer
