// Commands that write a checkpoint directory (make-test-model, quantize).
#pragma once
#include <string>

namespace qinfer::cli {

// Refuses a path that is a file, or a directory that already holds files
// unless force (a checkpoint of gigabytes is not to be replaced silently).
void check_output_dir(const std::string& path, bool force);

}  // namespace qinfer::cli
