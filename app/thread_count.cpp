#include "thread_count.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

int thread_count(int requested) {
  if (requested < 0) usage_fail("-t ", requested, ": the thread count must be at least 1 (or 0: all hardware threads)");
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (requested == 0) return hardware;
  if (requested > hardware) {
    std::fprintf(stderr, "qinfer: warning: -t %d is more than the %d hardware threads; using %d\n", requested, hardware,
                 hardware);
    return hardware;
  }
  return requested;
}

}  // namespace qinfer::cli
