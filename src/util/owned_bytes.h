// A block of memory this process owns for the lifetime of a model (weights
// packed or converted at load): anonymous pages, zero until written, so the
// load writes each byte once (a std::vector zeroes it all first). Transparent
// huge pages were tried: with the kernel compacting memory on demand they made
// loads slower and erratic (0.55-1.9 s against 0.59-0.74 s for 1.2 GB).
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer {

class OwnedBytes {
 public:
  explicit OwnedBytes(size_t n);
  ~OwnedBytes();
  OwnedBytes(OwnedBytes&& o) noexcept;
  OwnedBytes& operator=(OwnedBytes&& o) noexcept;
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace qinfer
