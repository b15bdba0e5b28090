// Random-weight Qwen3 checkpoints in Hugging Face layout, with the real shapes,
// so anyone can run and benchmark the engine without downloading weights; and
// scripted ones, whose greedy output is a chain of tokens chosen by a test.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/lora_config.h"
#include "model/qwen3.h"
#include "util/dtype.h"

namespace qinfer {

// "qwen3-0.6b" and "qwen3-30b-a3b" (the exact shapes of Qwen3-0.6B and of the
// mixture of experts Qwen3-30B-A3B), "tiny" (the shapes of the tiny test
// fixture) or "tiny-moe" (tiny's attention, a sparse MLP of 8 experts).
Qwen3Config test_model_preset(const std::string& name);

// Writes config.json, generation_config.json and model.safetensors (weights
// ~N(0, 0.02), norm weights ~1) into dir, which is created if needed; with
// the tensor names of `layout` (a backbone alone: those of Qwen3-Embedding).
void write_test_model(const std::string& dir, const Qwen3Config& config, DType dtype, uint64_t seed,
                      const Qwen3Layout& layout = {});

// A checkpoint whose greedy decoding follows a fixed chain of token ids: after
// chain[i] comes chain[i + 1], whatever came before. It exists to test what
// reads the output (the <think> / <tool_call> split of a chat reply), which
// random weights never exercise. How: every layer's o_proj and down_proj are
// zero, so the residual stream stays the token's embedding; each token with a
// successor gets a one-hot embedding e_k (k < hidden_size), every other token
// a zero one; the final norm is 1 and the (untied) lm_head row of the
// successor is 16 e_k, so its logit (16 sqrt(hidden_size)) is the only
// non-zero one, a margin that sampling at any temperature the API allows
// (up to 2) does not undo either. A token may recur only with the same
// successor; the last one has none (end the chain with an eos id). Error
// naming the conflict, an id outside the vocabulary, or more distinct tokens
// with a successor than hidden_size.
// A PEFT LoRA adapter for a model of `config`, as save_pretrained writes one
// (adapter_config.json from `lora`; adapter_model.safetensors with lora_A ~
// N(0, 1/in) and lora_B ~ N(0, 0.05^2), both nonzero, where PEFT starts B
// at zero, so the adapter changes the output as a trained one does) for each
// target projection ("q_proj", ..., "down_proj") of every layer that has it,
// at the rank lora.rank_of(module) gives. `prefix`: the model's tensor prefix.
struct TestLoraAdapter {
  LoraConfig lora;
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  DType dtype = DType::BF16;
};
void write_test_lora_adapter(const std::string& dir, const Qwen3Config& config, const TestLoraAdapter& adapter,
                             uint64_t seed, const std::string& prefix = "model.");

void write_scripted_test_model(const std::string& dir, Qwen3Config config, DType dtype, std::span<const int32_t> chain);

}  // namespace qinfer
