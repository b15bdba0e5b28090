// Available memory as the KV pool is sized by it: MemAvailable, lowered by
// the limits of the process's cgroup and of those above it (v1 and v2).
#include "util/available_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

using namespace qinfer;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

}  // namespace

// A re-hunt finding: only the cgroup tree's root was read, so a limit on the
// process's own cgroup (systemd MemoryMax=, slurm, a nested container) was
// missed and the pool sized from the whole host's memory.
TEST(AvailableMemory, TheProcesssCgroupAndThoseAboveItBoundMemAvailable) {
  test::ScratchDir dir("memory");
  const fs::path root = dir.path();
  write(root / "proc/meminfo", "MemTotal: 100000 kB\nMemAvailable: 50000 kB\n");
  EXPECT_EQ(available_memory_bytes(root), 50000 * 1024);

  write(root / "proc/self/cgroup", "0::/system.slice/qinfer.service\n");
  write(root / "sys/fs/cgroup/system.slice/qinfer.service/memory.max", "1000000\n");
  write(root / "sys/fs/cgroup/system.slice/qinfer.service/memory.current", "200000\n");
  EXPECT_EQ(available_memory_bytes(root), 800000) << "v2: the service's own limit";
  write(root / "sys/fs/cgroup/system.slice/memory.max", "500000\n");
  write(root / "sys/fs/cgroup/system.slice/memory.current", "400000\n");
  EXPECT_EQ(available_memory_bytes(root), 100000) << "v2: the slice above it has less left";
  write(root / "sys/fs/cgroup/system.slice/memory.max", "max\n");
  EXPECT_EQ(available_memory_bytes(root), 800000) << "'max' is no limit";

  write(root / "proc/self/cgroup", "9:name=systemd:/x\n4:memory:/jobs/42\n0::/\n");
  write(root / "sys/fs/cgroup/memory/jobs/42/memory.limit_in_bytes", "3000000\n");
  write(root / "sys/fs/cgroup/memory/jobs/42/memory.usage_in_bytes", "1000000\n");
  write(root / "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  EXPECT_EQ(available_memory_bytes(root), 2000000) << "v1: the memory controller's line";
}
