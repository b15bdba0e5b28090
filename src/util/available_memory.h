// How much memory this process can still take: what sizes the KV pool when no
// --kv-blocks / --kv-mem is given.
#pragma once
#include <cstdint>
#include <string>

namespace qinfer {

// Bytes: /proc/meminfo's MemAvailable, lowered to what the process's cgroup
// and those above it (v2 memory.max, or v1 memory.limit_in_bytes) have left;
// 0 when unknown. `root` prefixes /proc and /sys (the tests' fake trees).
int64_t available_memory_bytes(const std::string& root = "");

// What the KV pool may take by default: three quarters of what is available
// once the model is loaded (activations, threads and the page cache keep the rest).
inline int64_t default_kv_memory_limit() { return available_memory_bytes() / 4 * 3; }

}  // namespace qinfer
