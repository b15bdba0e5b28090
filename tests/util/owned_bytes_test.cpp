// OwnedBytes: zeroed, writable memory of the size asked; blocks of a huge
// page or more start on a huge page boundary, and the spare pages mapped to
// align them are given back, as is the block when it goes.
#include "util/owned_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

using namespace qinfer;

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Bytes this process has mapped, from /proc/self/maps.
size_t mapped_bytes() {
  std::ifstream maps("/proc/self/maps");
  size_t total = 0;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream range(line);
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    range >> std::hex >> begin >> dash >> end;
    total += end - begin;
  }
  return total;
}

}  // namespace

TEST(OwnedBytes, ZeroedWritableAndAlignedToHugePages) {
  for (size_t n : {size_t{1}, size_t{4095}, kHugePage - 1, kHugePage, kHugePage + 1, 5 * kHugePage + 123}) {
    OwnedBytes b(n);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), n);
    if (n >= kHugePage) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePage, 0u) << n;
    }
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(b.data()[i], 0) << n << " at " << i;
    b.data()[0] = 1;
    b.data()[n - 1] = 2;
  }
}

TEST(OwnedBytes, GivesBackWhatItMapped) {
  {
    OwnedBytes warm(3 * kHugePage);  // the allocator's and the loader's own first mappings
  }
  const size_t before = mapped_bytes();
  {
    std::vector<OwnedBytes> blocks;
    for (int i = 0; i < 20; ++i) blocks.emplace_back(kHugePage + 4096 * static_cast<size_t>(i) + 7);
    OwnedBytes moved = std::move(blocks[3]);
    blocks[5] = std::move(moved);
    EXPECT_EQ(blocks[3].data(), nullptr);
    size_t asked = 0;
    for (const auto& b : blocks) asked += (b.size() + 4095) / 4096 * 4096;
    // The spare huge page of each block is unmapped, not kept.
    EXPECT_LT(mapped_bytes(), before + asked + kHugePage);
  }
  EXPECT_EQ(mapped_bytes(), before);
}

// reserve(): address space for a pool sized for the worst case (the KV
// cache), committed page by page as written: a terabyte maps without being
// accounted for, and what cannot be mapped is an error naming its size.
TEST(OwnedBytes, ReserveMapsAddressSpaceWithoutCommittingIt) {
  OwnedBytes pool = OwnedBytes::reserve(size_t{1} << 40);
  ASSERT_NE(pool.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data()) % kHugePage, 0u);
  pool.data()[0] = 1;
  pool.data()[(size_t{1} << 40) - 1] = 2;
  EXPECT_EQ(pool.data()[12345], 0);
  try {
    OwnedBytes::reserve(size_t{1} << 60);
    FAIL() << "an exabyte was mapped";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot reserve 1099511627776 MiB of address space (", 0), 0u) << e.what();
  }
}
