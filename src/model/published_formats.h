// Checkpoints in the quantized formats Qwen publishes its models in, written
// from float ones: FP8 (Qwen3-*-FP8), AWQ (Qwen3-*-AWQ) and GPTQ
// (Qwen3-*-GPTQ-Int4/-Int8). The real ones are
// not reachable here; these are what the loader is tested and measured on
// (make-test-model --dtype fp8|awq).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"

namespace qinfer {

// Each projection (*_proj.weight) as E4M3 codes with one scale per block of
// kFp8Block x kFp8Block weights in <name>_scale_inv, of type scale_type;
// embeddings, lm_head, a mixture's router and the norms as they were. A
// block's scale is its largest magnitude / 448 (as stored), its codes the
// weights over that scale, rounded to nearest even.
constexpr int64_t kFp8Block = 128;
std::vector<TensorData> fp8_block_tensors(std::vector<TensorData> tensors, DType scale_type = DType::BF16);
nlohmann::ordered_json fp8_quantization_config();

// Each projection as AutoAWQ's GEMM layout stores it (ops/awq_groups.h):
// <base>.qweight, .qzeros and .scales (F16) in place of <base>.weight, with
// AutoAWQ's rounding: per output and group of `group` inputs, scale = (max -
// min) / 15 (as stored), zero = round(-min / scale) and codes round(w /
// scale) + zero, both clamped to [0, 15].
std::vector<TensorData> awq_group_tensors(std::vector<TensorData> tensors, int64_t group);
nlohmann::ordered_json awq_quantization_config(int64_t group);
// The largest AWQ or GPTQ group (at most 128) that divides every projection's inputs.
int64_t awq_group_for(const std::vector<TensorData>& tensors);

// Each projection as AutoGPTQ stores it (ops/gptq_groups.h), symmetric as
// Qwen's are: <base>.qweight, .qzeros, .scales (F16) and .g_idx (input i in
// group i / group) in place of <base>.weight. Per output and group, scale =
// 2 max|w| / (2^bits - 1) (as stored), zero 2^(bits-1) (stored minus one),
// codes round(w / scale) + zero clamped to [0, 2^bits - 1].
std::vector<TensorData> gptq_group_tensors(std::vector<TensorData> tensors, int64_t group, int bits);
nlohmann::ordered_json gptq_quantization_config(int64_t group, int bits);

enum class PublishedFormat { Fp8, Awq, Gptq };
// Rewrites the single-file float checkpoint in dir in that format (its
// model.safetensors, and config.json's quantization_config).
void rewrite_checkpoint_as(const std::string& dir, PublishedFormat format);

}  // namespace qinfer
