// LoRA adapters (PEFT's) on a Qwen3 model's linear layers, applied as PEFT
// applies them, unmerged: y = W·x + scaling · B·(A·x), with A [r, in] and
// B [out, r] in f32 (PEFT widens bf16 and f16 adapters to f32 by default).
// The base weights stay as they are, in any format: the update adds to
// their output, so a quantized base keeps its arithmetic and the adapter
// its own, and a row's result still never depends on the other rows.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "ops/matmul.h"
#include "util/owned_bytes.h"
#include "util/thread_pool.h"

namespace qinfer {

struct LoraDelta {
  WeightMatrix a;  // [r, in], panels as stored (f32, bf16 or f16: float_dot widens each to f32 as PEFT does)
  // B transposed, [r, out], times the scaling: y gains
  // sum_j (A·x)_j · row j, one multiply-add chain per output in j order
  // (PEFT sums B·(A·x) first and scales it: the same value up to rounding;
  // the scaling is exact for powers of two, the usual alpha = r or 2r).
  // In bf16 where every such value is one exactly (a bf16 adapter with a
  // power-of-two scaling): the same products from half the bytes a decode
  // step reads; in f32 otherwise. Held, as A's panels, in the adapter's
  // OwnedBytes: unloaded, its pages go back to the system at once (from a
  // std::vector on the thread that read it, glibc kept them in that thread's
  // arena: RSS grew with every load and unload).
  const void* b_data = nullptr;
  WeightFormat b_format = WeightFormat::F32;
  int64_t out = 0;
  int32_t adapter = -1;  // the named adapter whose rows take it (BatchSeq::adapter); -1: every row

  // B as a [r, out] matrix, in the format it is kept in.
  WeightMatrix b() const { return WeightMatrix{b_format, b_data, a.rows, out}; }
};

struct NamedLoraAdapter {
  std::string name, dir;
};

// The updates of one layer's projections, one per adapter that has one, in load order.
struct LoraLayer {
  std::vector<LoraDelta> q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
};

// A projection an adapter may update: its module under "layers.N.", its
// updates in LoraLayer, its [out, in] in a config, and whether it is the
// dense MLP's (a mixture's sparse layers have none).
struct LoraProjection {
  const char* module;
  std::vector<LoraDelta> LoraLayer::*deltas;
  int64_t out, in;
  bool mlp;
};
std::array<LoraProjection, 7> lora_projections(const Qwen3Config& c);

// Reads the PEFT adapter in `dir` (adapter_config.json and
// adapter_model.safetensors, as save_pretrained writes them) for a model of
// config `c` whose tensors are named with `prefix` ("model." or "" for a
// backbone saved alone): one LoraLayer per layer, their matrices in `owned`.
// Error naming the file and the tensor or field for anything PEFT would not
// run as y += scaling·B·A·x on these projections (other modules, shapes of
// another model, a rank the config does not give, NaN or infinity).
std::vector<LoraLayer> read_lora_adapter(const std::string& dir, const Qwen3Config& c, const std::string& prefix,
                                         std::vector<OwnedBytes>& owned, ThreadPool& pool);

// Scratch for add_lora, reused between calls.
struct LoraScratch {
  std::vector<float> ax;
};

// A projection's output and its updates.
struct LoraTarget {
  const std::vector<LoraDelta>& deltas;
  float* y;  // [n, out]
};

// y += B·(A·x) for each delta of each target, in order, on the rows it
// applies to (every row, or those whose row_adapter is its adapter); x is
// [n, in], the input of all the targets (q/k/v, gate/up): their lora_A
// multiply it in one parallel section, and each row then takes its updates
// in place. A row's result depends on its own adapter only.
void add_lora(const float* x, int64_t n, std::span<const int32_t> row_adapter,
              std::initializer_list<LoraTarget> targets, LoraScratch& s, ThreadPool& pool);

}  // namespace qinfer
