// The message of the Error that loading a checkpoint directory throws, for
// the tests of what a bad checkpoint is told.
#pragma once
#include <string>

#include "model/qwen3.h"
#include "util/error.h"

namespace qinfer::test {

// "(no error)" when the checkpoint loads.
inline std::string load_error(const std::string& dir, const LoadOptions& options = {}) {
  try {
    Qwen3Model::load(dir, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace qinfer::test
