#include "model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "io/lora_config.h"
#include "io/safetensors.h"
#include "ops/simd.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

namespace {

// Error unless an adapter tensor is F32, BF16 or F16 and every element is finite.
void check_lora_values(const TensorView& t, const std::string& file) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16 && t.dtype != DType::F16)
    fail(file, ": tensor ", t.name, " is ", dtype_name(t.dtype), "; LoRA matrices are F32, BF16 or F16");
  for (size_t i = 0; i < static_cast<size_t>(t.numel()); ++i)
    if (!std::isfinite(load_as_f32(t.data, t.dtype, i)))
      fail(file, ": tensor ", t.name, " holds NaN or infinity (row ", static_cast<int64_t>(i) / t.shape[1],
           "): the adapter is corrupt");
}

LoraDelta delta(const TensorView& a, const TensorView& b, double scale, const std::string& module,
                const std::string& file, std::vector<OwnedBytes>& owned, ThreadPool& pool) {
  const int64_t r = a.shape[0], in = a.shape[1], out = b.shape[0];
  check_lora_values(a, file);  // the panels keep A as stored (the f32 products are the same)
  check_lora_values(b, file);
  const WeightFormat format = weight_format_of(a.dtype);
  const std::vector<uint8_t> a_rows(a.data, a.data + a.nbytes);  // element-aligned, whatever the file's offsets
  OwnedBytes& buf = owned.emplace_back(float_panel_bytes(format, r, in));
  LoraDelta d;
  d.a = pack_float_panels(WeightMatrix{format, a_rows.data(), r, in}, buf.data(), pool);
  d.out = out;
  std::vector<float> b_t(static_cast<size_t>(r * out));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < r; ++j) {
      const double scaled = load_as_f32(b.data, b.dtype, static_cast<size_t>(o * r + j)) * scale;
      // Else the first token's logits are NaN and the weights get the blame.
      if (!std::isfinite(static_cast<float>(scaled)))
        fail(file, ": ", module, "'s lora_B times the adapter's scaling ", scale,
             " (lora_alpha / r in adapter_config.json) is beyond float's range");
      b_t[j * out + o] = static_cast<float>(scaled);
    }
  const bool all_bf16 = std::all_of(b_t.begin(), b_t.end(), [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return (bits & 0xffffu) == 0;
  });
  OwnedBytes& b_buf = owned.emplace_back(b_t.size() * (all_bf16 ? sizeof(uint16_t) : sizeof(float)));
  if (all_bf16) {
    auto* b_bf16 = reinterpret_cast<uint16_t*>(b_buf.data());
    for (size_t i = 0; i < b_t.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &b_t[i], sizeof(bits));
      b_bf16[i] = static_cast<uint16_t>(bits >> 16);
    }
  } else {
    std::memcpy(b_buf.data(), b_t.data(), b_t.size() * sizeof(float));
  }
  d.b_data = b_buf.data();
  d.b_format = all_bf16 ? WeightFormat::BF16 : WeightFormat::F32;
  return d;
}

}  // namespace

std::array<LoraProjection, 7> lora_projections(const Qwen3Config& c) {
  const int64_t H = c.hidden_size, q_dim = c.num_attention_heads * c.head_dim,
                kv_dim = c.num_key_value_heads * c.head_dim, I = c.intermediate_size;
  return {{
      {"self_attn.q_proj", &LoraLayer::q_proj, q_dim, H, false},
      {"self_attn.k_proj", &LoraLayer::k_proj, kv_dim, H, false},
      {"self_attn.v_proj", &LoraLayer::v_proj, kv_dim, H, false},
      {"self_attn.o_proj", &LoraLayer::o_proj, H, q_dim, false},
      {"mlp.gate_proj", &LoraLayer::gate_proj, I, H, true},
      {"mlp.up_proj", &LoraLayer::up_proj, I, H, true},
      {"mlp.down_proj", &LoraLayer::down_proj, H, I, true},
  }};
}

std::vector<LoraLayer> read_lora_adapter(const std::string& dir, const Qwen3Config& c, const std::string& prefix,
                                         std::vector<OwnedBytes>& owned, ThreadPool& pool) {
  if (dir.empty()) fail("the LoRA adapter's directory is empty (\"\"): give the directory");  // not "/..."
  const std::string file = dir + "/adapter_model.safetensors";
  if (!file_exists(file)) {
    if (file_exists(dir + "/adapter_model.bin"))
      fail(dir,
           ": the adapter is adapter_model.bin (a pickle, which qinfer does not run); save it with PEFT's "
           "save_pretrained(safe_serialization=True) as adapter_model.safetensors");
    fail(dir, ": no adapter_model.safetensors (a PEFT LoRA adapter directory has it and adapter_config.json)");
  }
  const LoraConfig config = read_lora_config(dir + "/adapter_config.json");
  const SafetensorsFile st(file);
  std::vector<LoraLayer> layers(static_cast<size_t>(c.num_hidden_layers));
  std::set<std::string> used;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (const LoraProjection& p : lora_projections(c)) {
      if (p.mlp && c.is_sparse_layer(l)) continue;
      const std::string module = prefix + "layers." + std::to_string(l) + "." + p.module;
      const std::string a_name = "base_model.model." + module + ".lora_A.weight",
                        b_name = "base_model.model." + module + ".lora_B.weight";
      const auto a = st.tensors().find(a_name), b = st.tensors().find(b_name);
      if (a == st.tensors().end() && b == st.tensors().end()) continue;
      if (a == st.tensors().end() || b == st.tensors().end())
        fail(file, ": ", a == st.tensors().end() ? b_name : a_name, " has no ",
             a == st.tensors().end() ? "lora_A" : "lora_B", " beside it");
      const int64_t r = config.rank_of(module);
      const std::vector<int64_t> a_shape = {r, p.in}, b_shape = {p.out, r};
      if (a->second.shape != a_shape || b->second.shape != b_shape)
        fail(file, ": ", module, "'s lora_A is ", shape_str(a->second.shape), " and lora_B ",
             shape_str(b->second.shape), "; rank ", r, " on this model's ", p.module, " [", p.out, ", ", p.in,
             "] needs ", shape_str(a_shape), " and ", shape_str(b_shape),
             " (an adapter for another model, or a rank adapter_config.json does not give)");
      (layers[l].*p.deltas)
          .push_back(delta(a->second, b->second, config.scaling_of(module), module, file, owned, pool));
      used.insert(a_name);
      used.insert(b_name);
    }
  for (const auto& [name, t] : st.tensors())
    if (!used.count(name))
      fail(file, ": tensor ", name, " is not a LoRA update qinfer applies to this ", c.num_hidden_layers,
           "-layer model: it adapts the attention projections of every layer and the MLP projections of dense "
           "layers (base_model.model.",
           prefix,
           "layers.N.<projection>.lora_A/lora_B.weight), not embeddings, lm_head, a mixture's experts or "
           "router, nor other tensors");
  if (used.empty()) fail(file, ": no LoRA tensors");
  return layers;
}

void add_lora(const float* x, int64_t n, std::span<const int32_t> row_adapter,
              std::initializer_list<LoraTarget> targets, LoraScratch& s, ThreadPool& pool) {
  struct Update {
    const LoraDelta* d;
    float* y;
    size_t ax;  // offset of its A·x in the scratch
  };
  std::vector<Update> updates;
  size_t ax = 0;
  for (const LoraTarget& t : targets)
    for (const LoraDelta& d : t.deltas) {
      if (d.adapter >= 0 && std::find(row_adapter.begin(), row_adapter.end(), d.adapter) == row_adapter.end())
        continue;  // no row of the step asked for it
      updates.push_back({&d, t.y, ax});
      ax += static_cast<size_t>(n * d.a.rows);
    }
  if (updates.empty()) return;
  s.ax.resize(ax);
  std::vector<MatmulTarget> a_targets;
  for (const Update& u : updates) a_targets.push_back({u.d->a, s.ax.data() + u.ax});
  const MatmulInput a_input{x, n, a_targets};
  matmul_each(std::span(&a_input, 1), pool);
  // Each row's outputs by stretches of columns, so that decode's one row
  // also shares B out between the threads; within a stretch the updates go
  // in order, so an output's chain is the same however the work is cut.
  constexpr size_t kColumns = 512;
  size_t widest = 0;
  for (const Update& u : updates) widest = std::max(widest, static_cast<size_t>(u.d->out));
  const size_t stretches = (widest + kColumns - 1) / kColumns;
  pool.parallel_for(static_cast<size_t>(n) * stretches, 1, [&](size_t w0, size_t w1) {
    for (size_t w = w0; w < w1; ++w) {
      const size_t i = w / stretches, c0 = w % stretches * kColumns;
      for (const Update& u : updates) {
        const size_t r = static_cast<size_t>(u.d->a.rows), out = static_cast<size_t>(u.d->out);
        if (c0 >= out || (u.d->adapter >= 0 && u.d->adapter != row_adapter[i])) continue;
        const size_t nc = std::min(kColumns, out - c0);
        const float* ax_row = s.ax.data() + u.ax + i * r;
        float* y = u.y + i * out + c0;
        if (u.d->b_format == WeightFormat::F32) {
          const auto* b = static_cast<const float*>(u.d->b_data);
          for (size_t j = 0; j < r; ++j) simd::axpy(ax_row[j], &b[j * out + c0], y, nc);
        } else {
          const auto* b = static_cast<const uint16_t*>(u.d->b_data);
          for (size_t j = 0; j < r; ++j) simd::axpy_bf16(ax_row[j], &b[j * out + c0], y, nc);
        }
      }
    }
  });
}

}  // namespace qinfer
