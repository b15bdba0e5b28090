// Random-weight Qwen3 checkpoints in Hugging Face layout, with the real shapes,
// so anyone can run and benchmark the engine without downloading weights.
#pragma once
#include <cstdint>
#include <string>

#include "io/hf_config.h"
#include "util/dtype.h"

namespace qinfer {

// "qwen3-0.6b" (the exact Qwen3-0.6B shapes) or "tiny" (the shapes of the tiny test fixture).
Qwen3Config test_model_preset(const std::string& name);

// Writes config.json, generation_config.json and model.safetensors (weights
// ~N(0, 0.02), norm weights ~1) into dir, which is created if needed.
void write_test_model(const std::string& dir, const Qwen3Config& config, DType dtype, uint64_t seed);

}  // namespace qinfer
