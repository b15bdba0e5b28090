#include "available_memory.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace qinfer {

namespace {

// The first number in `path` ("max" and unreadable files: -1).
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  long long v = -1;
  return in >> v ? v : -1;
}

int64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long long kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}

}  // namespace

int64_t available_memory_bytes() {
  int64_t available = mem_available();
  // A container's limit is not in /proc/meminfo.
  for (const auto& [limit, usage] :
       {std::pair<const char*, const char*>{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const int64_t max = read_number(limit), used = read_number(usage);
    if (max > 0 && used >= 0 && max < (int64_t{1} << 60)) {
      const int64_t left = std::max<int64_t>(max - used, 0);
      available = available < 0 ? left : std::min(available, left);
    }
  }
  return std::max<int64_t>(available, 0);
}

}  // namespace qinfer
