// Writes safetensors files (test checkpoints, `qinfer make-test-model`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace qinfer {

struct TensorData {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // product(shape) * dtype_size(dtype)
};

// Header padded with spaces to a multiple of 8 bytes so data stays aligned.
void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors);

}  // namespace qinfer
