// How a checkpoint's matrices are stored, from config.json's
// quantization_config: qinfer's own Q8/Q4 (Qwen3Model::save), FP8 with block
// scales (Qwen's -FP8 checkpoints), AWQ's 4-bit groups (Qwen's -AWQ) or
// GPTQ's 4- or 8-bit groups (Qwen's -GPTQ-Int4/-Int8);
// nothing for a float checkpoint. Values qinfer cannot read are refused here,
// naming the key.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ops/matmul.h"
#include "ops/quant.h"

namespace qinfer {

// Version of the Q8/Q4 layout (ops/quant.h) that save() writes. 3: Q8 rows
// interleaved in groups of 8 as unsigned codes, like Q4 (2: Q4 groups, Q8 rows
// one after another; 1: Q4 rows too).
constexpr int kQuantLayoutVersion = 3;

struct Fp8BlockSize {
  int64_t rows, cols;
};

struct GptqLayout {
  int bits;            // 4 or 8
  int64_t group_size;  // inputs per group; 0: one group of all inputs (group_size -1)
};

struct CheckpointQuantization {
  // {"quant_method": "qinfer", "format": "q8" | "q4", "version": 3}
  std::optional<QuantFormat> qinfer;
  // {"quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3",
  //  "activation_scheme": "dynamic"}
  std::optional<Fp8BlockSize> fp8;
  // {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm",
  //  "zero_point": true}: the group size
  std::optional<int64_t> awq_group_size;
  // {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false,
  //  "sym": true, "checkpoint_format": "gptq"}
  std::optional<GptqLayout> gptq;
  // What FP8, AWQ and GPTQ matrices become when loaded as stored: the config's
  // torch_dtype (transformers dequantizes to it on a CPU), bf16 where it
  // names no float type.
  WeightFormat dequantized = WeightFormat::BF16;
};

CheckpointQuantization read_checkpoint_quantization(const std::string& config_path);
// Its `qinfer` member: the format of a checkpoint written by Qwen3Model::save
// with quantized weights; nullopt for another checkpoint.
std::optional<QuantFormat> stored_quant_format(const std::string& config_path);

}  // namespace qinfer
