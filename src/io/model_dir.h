// Where a model lives: a checkpoint directory given as a path, or a hub id
// such as "Qwen/Qwen3-0.6B" looked up in the Hugging Face cache.
#pragma once
#include <string>

namespace qinfer {

// Returns the checkpoint directory for `model_arg`. An existing directory is
// taken as is; otherwise "org/name" is resolved in the Hugging Face cache
// ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub) under
// models--org--name/snapshots/<rev>, following refs/main. When nothing is
// found, the Error lists every place looked at and how to download the model.
std::string resolve_model_dir(const std::string& model_arg);

}  // namespace qinfer
