// A request as the engine tests queue it: a prompt and its generation options.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/session.h"

namespace qinfer::test {

struct Req {
  std::vector<int32_t> prompt;
  GenerationOptions opts;
};

}  // namespace qinfer::test
