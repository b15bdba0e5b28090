// libFuzzer target: the input is a whole .safetensors file (header length,
// JSON header, data), opened as the loader opens a checkpoint's file. A
// qinfer::Error naming the fault is the expected outcome of most inputs; a
// crash, a sanitizer report, an out-of-bounds tensor view or any other
// exception is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fuzz.safetensors", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  try {
    const qinfer::SafetensorsFile file("/proc/self/fd/" + std::to_string(fd));
    uint64_t sum = 0;
    for (const auto& [name, t] : file.tensors())  // every view must lie inside the file: ASan checks the reads
      for (size_t i = 0; i < t.nbytes; i += 4096) sum += t.data[i];
    (void)sum;
  } catch (const qinfer::Error&) {
    // a clear error naming the fault: the expected outcome
  }
  return 0;
}
