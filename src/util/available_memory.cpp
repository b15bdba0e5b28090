#include "util/available_memory.h"

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

int64_t mem_available(const std::string& root) {
  std::ifstream in(root + "/proc/meminfo");
  std::string key;
  long long kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}

// What the memory cgroup at `dir` and each one above it have left (limit - usage), the least; -1: no limit.
int64_t cgroup_room(const std::string& mount, std::string dir, const char* limit_file, const char* usage_file) {
  int64_t room = -1;
  for (;;) {
    const std::string at = mount + (dir == "/" ? "" : dir);
    const int64_t limit = read_number(at + "/" + limit_file), usage = read_number(at + "/" + usage_file);
    if (limit > 0 && usage >= 0 && limit < (int64_t{1} << 60)) {
      const int64_t left = std::max<int64_t>(limit - usage, 0);
      room = room < 0 ? left : std::min(room, left);
    }
    if (dir == "/" || dir.empty()) return room;
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

}  // namespace

int64_t available_memory_bytes(const std::string& root) {
  int64_t available = mem_available(root);
  // A container's or a service's limit is not in /proc/meminfo: the process's
  // own cgroup (/proc/self/cgroup: v2 "0::/path", v1 "N:...memory...:/path")
  // and those above it are.
  std::ifstream cgroups(root + "/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    int64_t room = -1;
    if (line.compare(0, first, "0") == 0 && controllers.empty())
      room = cgroup_room(root + "/sys/fs/cgroup", path, "memory.max", "memory.current");
    else if (("," + controllers + ",").find(",memory,") != std::string::npos)
      room = cgroup_room(root + "/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes");
    if (room >= 0) available = available < 0 ? room : std::min(available, room);
  }
  return std::max<int64_t>(available, 0);
}

}  // namespace qinfer
