#include "util/owned_bytes.h"

#include <sys/mman.h>

#include <utility>

#include "util/error.h"

namespace qinfer {

OwnedBytes::OwnedBytes(size_t n) : size_(n) {
  if (n == 0) return;
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("out of memory: cannot allocate ", n, " bytes");
  data_ = static_cast<uint8_t*>(p);
}

OwnedBytes::~OwnedBytes() {
  if (data_) ::munmap(data_, size_);
}

OwnedBytes::OwnedBytes(OwnedBytes&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

OwnedBytes& OwnedBytes::operator=(OwnedBytes&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace qinfer
