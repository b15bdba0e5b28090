// A file a command writes (--logits-out, run-batch's -o) must not be one it
// reads the model from: writing it would destroy the checkpoint, an adapter
// or the draft model, and truncating a mapped one ends the process with
// SIGBUS.
#pragma once
#include <string>
#include <vector>

#include "model/qwen3.h"

namespace qinfer::cli {

// The directories a command reads: the checkpoint's (resolved), its LoRA
// adapters' (`options`), and the draft model's when one is named.
std::vector<std::string> model_dirs(const std::string& model_dir, const LoadOptions& options,
                                    const std::string& draft_model);
// Error naming `flag` when `path` is a file in one of `dirs`.
void refuse_model_file(const char* flag, const std::string& path, const std::vector<std::string>& dirs);

}  // namespace qinfer::cli
