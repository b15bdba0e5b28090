// Writes safetensors files (test checkpoints, `qinfer make-test-model`,
// `qinfer quantize`).
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
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

// Element i of a float tensor (F32, F16 or BF16), rounded to nearest even.
void set_element(TensorData& t, int64_t i, float v);
// Element i as f32.
inline float element(const TensorData& t, int64_t i) {
  return load_as_f32(t.bytes.data(), t.dtype, static_cast<size_t>(i));
}

// A tensor whose bytes stay where they are (a loaded model's weights):
// `write` appends exactly `nbytes` to the stream when its turn comes, so a
// model is saved without a second copy of it in memory.
struct TensorSource {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
  std::function<void(std::ostream&)> write;
};

// Header padded with spaces to a multiple of 8 bytes so data stays aligned.
// A failed write removes the partial file.
void write_safetensors(const std::string& path, const std::vector<TensorSource>& tensors);
void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors);

}  // namespace qinfer
