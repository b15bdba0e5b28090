#include "util/owned_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "util/error.h"

namespace qinfer {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64 and most ARM64 kernels
}  // namespace

OwnedBytes::OwnedBytes(size_t n, bool reserve_only) : size_(n) {
  if (n == 0) return;
  // Mapped with a huge page's worth to spare, then trimmed to start on a huge
  // page boundary (kernels before 6.7 do not align them): else a matrix of a
  // few huge pages would get none.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t whole = (n + page - 1) / page * page;  // munmap trims whole pages
  const size_t spare = whole >= kHugePage ? kHugePage : 0;
  void* p = ::mmap(nullptr, whole + spare, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (reserve_only ? MAP_NORESERVE : 0), -1, 0);
  if (p == MAP_FAILED) {
    if (reserve_only) fail("cannot reserve ", n >> 20, " MiB of address space (", std::strerror(errno), ")");
    fail("out of memory: cannot allocate ", n, " bytes");
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = spare != 0 ? (start + kHugePage - 1) / kHugePage * kHugePage : start;
  if (aligned != start) ::munmap(p, aligned - start);
  if (const size_t tail = spare - (aligned - start); tail != 0)
    ::munmap(reinterpret_cast<void*>(aligned + whole), tail);
  data_ = reinterpret_cast<uint8_t*>(aligned);
  ::madvise(data_, whole, MADV_HUGEPAGE);
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
