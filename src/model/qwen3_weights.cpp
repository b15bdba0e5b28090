// Qwen3Model's weights: binding the checkpoint's tensors in place (or
// converting them at load), and writing a converted model back out as a
// checkpoint. The forward pass is in qwen3.cpp.
#include "model/qwen3.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/safetensors_writer.h"
#include "model/checkpoint_quantization.h"
#include "ops/awq_groups.h"
#include "ops/fp8_blocks.h"
#include "ops/gptq_groups.h"
#include "ops/ops.h"
#include "ops/simd.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/owned_bytes.h"

namespace qinfer {

namespace {

// Whether a matrix may be converted to Q8/Q4 at load. A mixture's router
// stays as stored, as llama.cpp keeps it too: it picks the experts a token
// goes through, and a rounding that changes a pick changes the whole output.
enum class Quantizable { Yes, No };

// Calls matrix(name, w, rows, cols, quantizable) and vector(name, v, n) for
// every tensor of the model in checkpoint order; the one place that knows
// the tensor names. A sparse layer's experts must already be sized.
template <class Weights, class MatrixFn, class VectorFn>
void for_each_tensor(const Qwen3Config& c, const Qwen3Layout& layout, Weights& w, MatrixFn matrix, VectorFn vector) {
  const int64_t H = c.hidden_size, hd = c.head_dim, q_dim = c.num_attention_heads * hd,
                kv_dim = c.num_key_value_heads * hd, I = c.intermediate_size, EI = c.moe_intermediate_size;
  constexpr Quantizable yes = Quantizable::Yes;
  const std::string& m = layout.prefix;
  matrix(m + "embed_tokens.weight", w.embed_tokens, c.vocab_size, H, yes);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = m + "layers." + std::to_string(l) + ".";
    auto& L = w.layers[l];
    vector(p + "input_layernorm.weight", L.input_norm, H);
    matrix(p + "self_attn.q_proj.weight", L.q_proj, q_dim, H, yes);
    matrix(p + "self_attn.k_proj.weight", L.k_proj, kv_dim, H, yes);
    matrix(p + "self_attn.v_proj.weight", L.v_proj, kv_dim, H, yes);
    matrix(p + "self_attn.o_proj.weight", L.o_proj, H, q_dim, yes);
    vector(p + "self_attn.q_norm.weight", L.q_norm, hd);
    vector(p + "self_attn.k_norm.weight", L.k_norm, hd);
    vector(p + "post_attention_layernorm.weight", L.post_attention_norm, H);
    if (c.is_sparse_layer(l)) {
      matrix(p + "mlp.gate.weight", L.sparse_mlp.router, c.num_experts, H, Quantizable::No);
      for (size_t e = 0; e < L.sparse_mlp.experts.size(); ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        auto& ex = L.sparse_mlp.experts[e];
        matrix(x + "gate_proj.weight", ex.gate_proj, EI, H, yes);
        matrix(x + "up_proj.weight", ex.up_proj, EI, H, yes);
        matrix(x + "down_proj.weight", ex.down_proj, H, EI, yes);
      }
    } else {
      matrix(p + "mlp.gate_proj.weight", L.gate_proj, I, H, yes);
      matrix(p + "mlp.up_proj.weight", L.up_proj, I, H, yes);
      matrix(p + "mlp.down_proj.weight", L.down_proj, H, I, yes);
    }
  }
  vector(m + "norm.weight", w.final_norm, H);
  // Tied: the embedding matrix is the lm_head and any lm_head.weight in the file is ignored.
  if (!c.tie_word_embeddings && layout.lm_head) matrix("lm_head.weight", w.lm_head, c.vocab_size, H, yes);
  if (layout.score_rows > 0) matrix("score.weight", w.score, layout.score_rows, H, yes);
}

// Gives the pages of a read-only file mapping back to the page cache (they
// stop counting in this process's resident memory) once their tensor has
// been converted; only whole pages inside [p, p + n).
void release_pages(const void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Binds tensors of the checkpoint as weight matrices, converting them when
// the options ask for another format.
struct Binder {
  const Checkpoint& ck;
  const LoadOptions& options;
  const CheckpointQuantization quant;  // config.json's quantization_config
  std::vector<OwnedBytes>& owned;
  size_t& bytes;
  std::unique_ptr<ThreadPool> pool;  // created on the first conversion

  const uint8_t* aligned_data(const TensorView& t, size_t alignment) {
    if (reinterpret_cast<uintptr_t>(t.data) % alignment == 0) return t.data;
    std::memcpy(owned.emplace_back(t.nbytes).data(), t.data, t.nbytes);
    return owned.back().data();
  }

  // The matrix as stored: a float tensor, or a U8 tensor of quantized rows
  // (quant.h) in the format config.json's quantization_config names.
  WeightMatrix stored(const std::string& name, int64_t rows, int64_t cols) {
    const TensorView* t = ck.find(name);
    if (t && t->dtype == DType::U8) {
      if (!quant.qinfer)
        fail("tensor ", name, " is U8 (quantized) but config.json has no qinfer quantization_config saying the format");
      if (cols % kQuantBlock != 0)
        fail("tensor ", name, ": quantized with ", cols, " columns, not a multiple of the block size ", kQuantBlock);
      const WeightFormat f = *quant.qinfer == QuantFormat::Q8 ? WeightFormat::Q8 : WeightFormat::Q4;
      const std::vector<int64_t> want = {quant_stored_rows(*quant.qinfer, rows),
                                         static_cast<int64_t>(quant_row_bytes(*quant.qinfer, cols))};
      if (t->shape != want)
        fail("tensor ", name, ": U8 shape ", shape_str(t->shape), " is not the ", weight_format_name(f), " rows ",
             shape_str(want), " of a [", rows, ", ", cols, "] matrix");
      return WeightMatrix{f, aligned_data(*t, 2), rows, cols};
    }
    const TensorView& f = ck.require(name, {rows, cols});
    if (f.dtype != DType::F32 && f.dtype != DType::BF16 && f.dtype != DType::F16)
      fail("tensor ", name, " is ", dtype_name(f.dtype),
           "; a weight matrix is F32, BF16 or F16 (or U8 rows that config.json's quantization_config names)");
    return WeightMatrix{weight_format_of(f.dtype), aligned_data(f, dtype_size(f.dtype)), rows, cols};
  }

  // A [rows, cols] matrix encoded as format `to` from its rows as f32
  // (row(r, out)), in owned memory, by groups of 8 rows (a Q4 group; quant.h).
  template <class RowFn>
  WeightMatrix encode(const std::string& name, int64_t rows, int64_t cols, WeightFormat to, RowFn row) {
    WeightMatrix w{to, nullptr, rows, cols};
    // A NaN or infinity would become finite codes in Q8/Q4 (the block scale
    // ignores it) and corrupt weights would pass unnoticed; as floats they
    // reach the logits, where generation reports them.
    std::atomic<int64_t> first_bad_row{INT64_MAX};
    OwnedBytes& buf = owned.emplace_back(w.bytes());
    w.data = buf.data();
    if (!pool) pool = std::make_unique<ThreadPool>(options.threads);
    const size_t groups = static_cast<size_t>((w.rows + kQuantGroupRows - 1) / kQuantGroupRows);
    pool->parallel_for(groups, 8, [&](size_t g0, size_t g1) {
      std::vector<float> rows(static_cast<size_t>(kQuantGroupRows * w.cols));
      for (size_t g = g0; g < g1; ++g) {
        const int64_t r0 = static_cast<int64_t>(g) * kQuantGroupRows, n = std::min(kQuantGroupRows, w.rows - r0);
        for (int64_t r = 0; r < n; ++r) row(r0 + r, &rows[r * w.cols]);
        if (w.quantized()) {
          const int64_t bad = quantize_matrix(w.quant_format(), rows.data(), n, w.cols,
                                              buf.data() + quant_matrix_bytes(w.quant_format(), r0, w.cols));
          int64_t seen = first_bad_row.load();
          while (bad >= 0 && r0 + bad < seen && !first_bad_row.compare_exchange_weak(seen, r0 + bad)) {
          }
        } else {
          for (int64_t r = 0; r < n; ++r)
            simd::narrow_f32(&rows[r * w.cols], static_cast<size_t>(w.cols), float_dtype(to),
                             buf.data() + (r0 + r) * w.row_bytes());
        }
      }
    });
    if (first_bad_row.load() != INT64_MAX)
      fail("tensor ", name, " row ", first_bad_row.load(), " holds NaN or infinity: the checkpoint is corrupt (",
           weight_format_name(to), " would hide it)");
    return w;
  }

  // `from` re-encoded as format `to` through f32.
  WeightMatrix convert(const std::string& name, const WeightMatrix& from, WeightFormat to) {
    const WeightMatrix w =
        encode(name, from.rows, from.cols, to, [&](int64_t r, float* out) { widen_row(from, r, out); });
    release_pages(from.data, from.bytes());
    return w;
  }

  // A matrix stored in another tool's quantized format (FP8, AWQ, GPTQ), its rows
  // given by row(r, out), as the config's torch_dtype unless --weights asks
  // otherwise: what transformers computes with on a CPU, where it
  // dequantizes to that type. A router and matrices whose width is not a
  // multiple of the Q8/Q4 block stay at that type under --weights q8/q4.
  template <class RowFn>
  WeightMatrix dequantized(const std::string& name, int64_t rows, int64_t cols, bool quantizable, RowFn row) {
    WeightFormat to = options.weights.value_or(quant.dequantized);
    if ((to == WeightFormat::Q8 || to == WeightFormat::Q4) && !quantizable) to = quant.dequantized;
    return encode(name, rows, cols, to, row);
  }

  static void require_float_scales(const TensorView& s) {
    if (s.dtype != DType::F32 && s.dtype != DType::BF16 && s.dtype != DType::F16)
      fail("tensor ", s.name, " is ", dtype_name(s.dtype), "; scales are F32, BF16 or F16");
  }

  // An FP8 checkpoint's matrix: E4M3 codes, the block scales in <name>_scale_inv.
  WeightMatrix dequantized_fp8(const std::string& name, const TensorView& codes, int64_t rows, int64_t cols,
                               bool quantizable) {
    if (!quant.fp8)
      fail("tensor ", name, " is F8_E4M3 but config.json's quantization_config does not describe FP8 weights ",
           "(quant_method \"fp8\" with weight_block_size)");
    ck.require(name, {rows, cols});
    const std::string scale_name = name + "_scale_inv";
    const int64_t block_rows = quant.fp8->rows, block_cols = quant.fp8->cols;
    const std::vector<int64_t> scale_shape = {(rows + block_rows - 1) / block_rows,
                                              (cols + block_cols - 1) / block_cols};
    const TensorView* s = ck.find(scale_name);
    if (!s)
      fail("tensor ", name, " is F8_E4M3 but the checkpoint has no ", scale_name, " (its block scales, shape ",
           shape_str(scale_shape), ")");
    if (s->shape != scale_shape)
      fail("tensor ", scale_name, " has shape ", shape_str(s->shape), "; ", shape_str(scale_shape), " blocks of ",
           block_rows, " x ", block_cols, " cover a [", rows, ", ", cols, "] matrix");
    require_float_scales(*s);
    const Fp8BlockScales scales{s->data, s->dtype, block_rows, block_cols};
    const WeightMatrix w = dequantized(name, rows, cols, quantizable, [&](int64_t r, float* out) {
      dequantize_fp8_row(codes.data, r, cols, scales, out);
    });
    release_pages(codes.data, codes.nbytes);
    return w;
  }

  // An AWQ or GPTQ checkpoint's matrix: <base>.qweight, .qzeros and .scales
  // (and GPTQ's .g_idx) in place of <base>.weight.
  WeightMatrix dequantized_packed(const std::string& name, const std::string& base, int64_t rows, int64_t cols,
                                  bool quantizable) {
    if (quant.awq_group_size) return dequantized_awq(base, rows, cols, quantizable);
    if (quant.gptq) return dequantized_gptq(base, rows, cols, quantizable);
    fail("the checkpoint has ", base, ".qweight (AWQ or GPTQ) in place of ", name,
         " but config.json's quantization_config describes neither (quant_method \"awq\" or \"gptq\")");
  }

  static void require_packed_codes(const TensorView& t, const char* format) {
    if (t.dtype != DType::I32) fail("tensor ", t.name, " is ", dtype_name(t.dtype), "; ", format, " packs it in I32");
  }

  WeightMatrix dequantized_awq(const std::string& base, int64_t rows, int64_t cols, bool quantizable) {
    const int64_t group = *quant.awq_group_size;
    if (rows % 8 != 0)
      fail("tensor ", base, ".qweight: AWQ packs 8 outputs to an int32, and ", rows, " is not a multiple of 8");
    if (cols % group != 0)
      fail("tensor ", base, ".qweight: ", cols, " inputs are not whole AWQ groups of ", group, " (group_size)");
    const TensorView& qweight = ck.require(base + ".qweight", {cols, rows / 8});
    const TensorView& qzeros = ck.require(base + ".qzeros", {cols / group, rows / 8});
    const TensorView& scales = ck.require(base + ".scales", {cols / group, rows});
    require_packed_codes(qweight, "AWQ");
    require_packed_codes(qzeros, "AWQ");
    require_float_scales(scales);
    const AwqMatrix m{qweight.data, qzeros.data, scales.data, scales.dtype, rows, cols, group};
    const WeightMatrix w = dequantized(base + ".qweight", rows, cols, quantizable,
                                       [&](int64_t r, float* out) { dequantize_awq_row(m, r, out); });
    release_pages(qweight.data, qweight.nbytes);
    return w;
  }

  WeightMatrix dequantized_gptq(const std::string& base, int64_t rows, int64_t cols, bool quantizable) {
    const int bits = quant.gptq->bits;
    const int64_t per = 32 / bits, group = quant.gptq->group_size ? quant.gptq->group_size : cols,
                  groups = (cols + group - 1) / group;
    if (rows % per != 0 || cols % per != 0)
      fail("tensor ", base, ".qweight: GPTQ packs ", per, " codes to an int32, and a [", rows, ", ", cols,
           "] matrix is not a multiple of ", per, " both ways");
    const TensorView& qweight = ck.require(base + ".qweight", {cols / per, rows});
    const TensorView& qzeros = ck.require(base + ".qzeros", {groups, rows / per});
    const TensorView& scales = ck.require(base + ".scales", {groups, rows});
    require_packed_codes(qweight, "GPTQ");
    require_packed_codes(qzeros, "GPTQ");
    require_float_scales(scales);
    // desc_act checkpoints name each input's group; a group outside the
    // scales would read beyond them.
    const TensorView* g_idx = ck.find(base + ".g_idx");
    if (g_idx) {
      ck.require(g_idx->name, {cols});
      require_packed_codes(*g_idx, "GPTQ");
      for (int64_t i = 0; i < cols; ++i) {
        int32_t g;
        std::memcpy(&g, g_idx->data + 4 * i, 4);
        if (g < 0 || g >= groups)
          fail("tensor ", g_idx->name, " puts input ", i, " in group ", g, "; the scales have ", groups, " groups");
      }
    }
    const GptqMatrix m{qweight.data, qzeros.data, scales.data, scales.dtype, g_idx ? g_idx->data : nullptr,
                       bits,         rows,        cols,        group};
    const WeightMatrix w = dequantized(base + ".qweight", rows, cols, quantizable,
                                       [&](int64_t r, float* out) { dequantize_gptq_row(m, r, out); });
    release_pages(qweight.data, qweight.nbytes);
    return w;
  }

  // A float matrix as panels (the layout matmul takes), in owned memory; the
  // rows it came from are given back (file pages) or freed (a conversion).
  WeightMatrix packed(const WeightMatrix& rows) {
    const bool converted = !owned.empty() && rows.data == owned.back().data();
    if (!pool) pool = std::make_unique<ThreadPool>(options.threads);
    OwnedBytes& buf = owned.emplace_back(float_panel_bytes(rows.format, rows.rows, rows.cols));
    const WeightMatrix w = pack_float_panels(rows, buf.data(), *pool);
    if (converted)
      owned.erase(owned.end() - 2);
    else
      release_pages(rows.data, rows.bytes());
    return w;
  }

  void matrix(const std::string& name, WeightMatrix& out, int64_t rows, int64_t cols, Quantizable may_quantize) {
    const std::optional<WeightFormat> to = options.weights;
    const bool quantizable = cols % kQuantBlock == 0 && may_quantize == Quantizable::Yes;
    const TensorView* t = ck.find(name);
    const std::string base = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
    if (t && t->dtype == DType::F8_E4M3) {
      out = dequantized_fp8(name, *t, rows, cols, quantizable);
    } else if (!t && ck.find(base + ".qweight")) {
      out = dequantized_packed(name, base, rows, cols, quantizable);
    } else {
      out = stored(name, rows, cols);
      if (to && *to != out.format && out.quantized() && (*to == WeightFormat::Q8 || *to == WeightFormat::Q4))
        fail("--weights ", weight_format_name(*to), ": ", name, " is stored as ", weight_format_name(out.format),
             "; quantizing it again would add a second rounding error (load it as stored, or quantize the original)");
      if (to && *to != out.format && (quantizable || (*to != WeightFormat::Q8 && *to != WeightFormat::Q4)))
        out = convert(name, out, *to);
    }
    if (!out.quantized()) out = packed(out);
    if (options.bf16_products) {
      if (out.format != WeightFormat::BF16)
        fail("--fast-prefill multiplies bf16 weights, and ", name, " is ", weight_format_name(out.format),
             (to ? "" : " as stored"), ": load the weights as bf16 (--weights bf16) or leave --fast-prefill out");
      out.bf16_products = true;
    }
    bytes += out.bytes();
  }

  void vector(const std::string& name, std::vector<float>& out, int64_t n) {
    const TensorView& t = ck.require(name, {n});
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      fail("tensor ", name, ": a norm weight cannot be ", dtype_name(t.dtype));
    bytes += t.nbytes;
    out.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[i] = load_as_f32(t.data, t.dtype, i);
  }
};

}  // namespace

std::optional<WeightFormat> parse_weight_format(const std::string& name) {
  if (name == "auto") return std::nullopt;
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4})
    if (name == weight_format_name(f)) return f;
  fail("unknown weight format '", name, "' (known: auto, f32, f16, bf16, q8, q4)");
}

DType parse_kv_dtype(const std::string& name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  fail("unknown KV cache type '", name, "' (known: f32, f16, bf16)");
}

std::unique_ptr<Qwen3Model> Qwen3Model::load(const std::string& dir, const LoadOptions& options) {
  auto m = std::make_unique<Qwen3Model>();
  m->config_ = load_qwen3_config(dir + "/config.json");
  m->checkpoint_ = Checkpoint::open(dir);
  m->kv_cache_ = options.kv_cache;
  const Qwen3Config& c = m->config_;
  Qwen3Weights& w = m->weights_;
  // A backbone saved alone (Qwen3Model, as sentence-transformers saves
  // Qwen3-Embedding) names its tensors without "model." and may have no
  // lm_head: then it embeds and cannot generate.
  Qwen3Layout& layout = m->layout_;
  if (!m->checkpoint_.find("model.embed_tokens.weight") && m->checkpoint_.find("embed_tokens.weight"))
    layout = {"", m->checkpoint_.find("lm_head.weight") != nullptr};
  // A sequence classifier (Qwen3ForSequenceClassification) has score.weight
  // and, untied, no lm_head.weight.
  if (const TensorView* score = m->checkpoint_.find("score.weight")) {
    if (score->shape.size() != 2 || score->shape[0] < 1 || score->shape[0] > 1024)
      fail(dir, ": score.weight has shape ", shape_str(score->shape), ", not [labels (1 to 1024), hidden]");
    layout.score_rows = score->shape[0];
    layout.lm_head = m->checkpoint_.find("lm_head.weight") != nullptr;
    // Else each input's label would be named by another row's (transformers refuses the size mismatch).
    if (!c.id2label.empty() && static_cast<int64_t>(c.id2label.size()) != layout.score_rows)
      fail(dir, "/config.json: id2label names ", c.id2label.size(), " labels but score.weight has ", layout.score_rows,
           " rows, one a label");
  } else if (c.sequence_classifier) {
    fail(dir, ": a Qwen3ForSequenceClassification checkpoint without score.weight (its classifier head)");
  }
  // Checked before the layer tables are sized by it: a config may say 10^12.
  const std::string last_layer =
      layout.prefix + "layers." + std::to_string(c.num_hidden_layers - 1) + ".input_layernorm.weight";
  if (!m->checkpoint_.find(last_layer))
    fail(dir, "/config.json: num_hidden_layers is ", c.num_hidden_layers, " but the checkpoint has no ", last_layer);
  // Layers beyond it would be left out silently: another model than the checkpoint's.
  const std::string next_layer =
      layout.prefix + "layers." + std::to_string(c.num_hidden_layers) + ".input_layernorm.weight";
  if (m->checkpoint_.find(next_layer))
    fail(dir, "/config.json: num_hidden_layers is ", c.num_hidden_layers, " but the checkpoint has more layers (",
         next_layer, ")");
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    if (c.is_sparse_layer(l)) {
      // Checked before the expert table is sized by it, as the layers are.
      // (Its down_proj is .weight, or .qweight in an AWQ or GPTQ checkpoint.)
      const std::string last_expert = layout.prefix + "layers." + std::to_string(l) + ".mlp.experts." +
                                      std::to_string(c.num_experts - 1) + ".down_proj.weight";
      if (!m->checkpoint_.find(last_expert) &&
          !m->checkpoint_.find(last_expert.substr(0, last_expert.size() - 6) + "qweight")) {
        // A hunt finding: experts stacked in one tensor (as some exports write them) were blamed on num_experts.
        const std::string fused = layout.prefix + "layers." + std::to_string(l) + ".mlp.experts.gate_up_proj";
        if (m->checkpoint_.find(fused) || m->checkpoint_.find(fused + ".weight"))
          fail(dir, ": the experts are stacked in one tensor (", fused,
               "); qinfer reads them one per expert, as Qwen publishes them (mlp.experts.E.gate_proj.weight)");
        fail(dir, "/config.json: num_experts is ", c.num_experts, " but the checkpoint has no ", last_expert);
      }
      SparseMlp& mlp = w.layers[l].sparse_mlp;
      mlp.experts.resize(static_cast<size_t>(c.num_experts));
      mlp.top_k = c.num_experts_per_tok;
      mlp.normalize = c.norm_topk_prob;
    }
  Binder b{m->checkpoint_, options,          read_checkpoint_quantization(dir + "/config.json"),
           m->owned_,      m->weight_bytes_, nullptr};
  for_each_tensor(
      c, layout, w,
      [&](const std::string& name, WeightMatrix& x, int64_t rows, int64_t cols, Quantizable q) {
        b.matrix(name, x, rows, cols, q);
      },
      [&](const std::string& name, std::vector<float>& v, int64_t n) { b.vector(name, v, n); });
  m->unused_tensors_ = m->checkpoint_.unread();
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;
  if (!options.lora_adapters.empty() || !options.lora_modules.empty())
    if (!b.pool) b.pool = std::make_unique<ThreadPool>(options.threads);
  for (const std::string& dir : options.lora_adapters) {  // every row's
    std::vector<LoraLayer> updates = read_lora_adapter(dir, c, layout.prefix, m->owned_, *b.pool);
    m->install_adapter(-1, updates);
  }
  for (const NamedLoraAdapter& a : options.lora_modules) {
    ReadAdapter read;
    read.layers = read_lora_adapter(a.dir, c, layout.prefix, read.owned, *b.pool);
    m->add_adapter(a.name, std::move(read));
  }

  m->rope_inv_freq_.resize(static_cast<size_t>(c.head_dim / 2));
  if (c.yarn) {
    const Qwen3Config::Yarn& y = *c.yarn;
    yarn_inv_freq(c.rope_theta, c.head_dim, y.factor, static_cast<double>(y.original_max_position_embeddings),
                  y.beta_fast, y.beta_slow, y.truncate, m->rope_inv_freq_.data());
    m->rope_scale_ = static_cast<float>(y.attention_factor);
  } else {
    qinfer::rope_inv_freq(c.rope_theta, c.head_dim, m->rope_inv_freq_.data());
  }
  return m;
}

void Qwen3Model::install_adapter(int32_t index, std::vector<LoraLayer>& layers) {
  for (size_t l = 0; l < layers.size(); ++l)
    for (const LoraProjection& p : lora_projections(config_))
      for (LoraDelta& d : layers[l].*p.deltas) {
        d.adapter = index;
        weight_bytes_ += d.a.bytes() + d.b().bytes();
        (weights_.layers[l].lora.*p.deltas).push_back(std::move(d));
      }
}

std::vector<Qwen3Model::AdapterName> Qwen3Model::adapter_names() const {
  std::lock_guard lock(adapter_names_mu_);
  return adapter_names_;
}

std::optional<int32_t> Qwen3Model::find_adapter(const std::string& name) const {
  std::lock_guard lock(adapter_names_mu_);
  for (size_t i = 0; i < adapter_names_.size(); ++i)
    if (adapter_names_[i].listed && adapter_names_[i].name == name) return static_cast<int32_t>(i);
  return std::nullopt;
}

void Qwen3Model::check_adapter(int32_t adapter) const {
  if (adapter < -1 || adapter >= static_cast<int64_t>(adapter_memory_.size()))
    fail("LoRA adapter ", adapter, " does not exist: the model has ", adapter_memory_.size(), " named adapters");
  if (adapter >= 0 && !adapter_memory_[static_cast<size_t>(adapter)].loaded)
    fail("LoRA adapter '", adapter_names()[static_cast<size_t>(adapter)].name, "' was unloaded");
}

Qwen3Model::ReadAdapter Qwen3Model::read_adapter(const std::string& dir) const {
  ThreadPool caller_only(1);  // the engine's pool is the engine thread's
  ReadAdapter read;
  read.layers = read_lora_adapter(dir, config_, layout_.prefix, read.owned, caller_only);
  return read;
}

int32_t Qwen3Model::add_adapter(const std::string& name, ReadAdapter adapter, std::optional<int32_t>* replaced) {
  if (name.empty()) fail("a LoRA adapter needs a name");
  // Names are added here only (an HTTP thread may unlist one meanwhile): the index is the next one, and the name
  // is listed, and the one it replaces unlisted, once its updates are in (a review finding: an install that threw
  // left the replaced adapter unlisted, and a name without updates).
  const auto listed_as_name = [&]() -> std::optional<int32_t> {
    for (size_t i = 0; i < adapter_names_.size(); ++i)
      if (adapter_names_[i].listed && adapter_names_[i].name == name) return static_cast<int32_t>(i);
    return std::nullopt;
  };
  int32_t index = 0;
  {
    std::lock_guard lock(adapter_names_mu_);
    if (!replaced && listed_as_name()) fail("a LoRA adapter named '", name, "' is already loaded");
    index = static_cast<int32_t>(adapter_names_.size());
  }
  install_adapter(index, adapter.layers);
  adapter_memory_.push_back({true, std::move(adapter.owned)});
  replaced_by_.push_back(-1);
  std::lock_guard lock(adapter_names_mu_);
  if (replaced) {
    *replaced = listed_as_name();
    if (*replaced) {
      adapter_names_[static_cast<size_t>(**replaced)].listed = false;
      replaced_by_[static_cast<size_t>(**replaced)] = index;
    }
  }
  adapter_names_.push_back({name, true});
  return index;
}

int32_t Qwen3Model::current_adapter(int32_t adapter) const {
  while (adapter >= 0 && static_cast<size_t>(adapter) < replaced_by_.size() &&
         !adapter_memory_[static_cast<size_t>(adapter)].loaded && replaced_by_[static_cast<size_t>(adapter)] >= 0)
    adapter = replaced_by_[static_cast<size_t>(adapter)];
  return adapter;
}

std::optional<int32_t> Qwen3Model::unlist_adapter(const std::string& name) {
  std::lock_guard lock(adapter_names_mu_);
  for (size_t i = 0; i < adapter_names_.size(); ++i)
    if (adapter_names_[i].listed && adapter_names_[i].name == name) {
      adapter_names_[i].listed = false;
      return static_cast<int32_t>(i);
    }
  return std::nullopt;
}

void Qwen3Model::drop_adapter(int32_t adapter) {
  check_adapter(adapter);
  if (adapter < 0) fail("only a named LoRA adapter can be dropped");
  for (Qwen3Layer& layer : weights_.layers)
    for (const LoraProjection& p : lora_projections(config_)) {
      std::vector<LoraDelta>& deltas = layer.lora.*p.deltas;
      for (const LoraDelta& d : deltas)
        if (d.adapter == adapter) weight_bytes_ -= d.a.bytes() + d.b().bytes();
      std::erase_if(deltas, [&](const LoraDelta& d) { return d.adapter == adapter; });
    }
  AdapterMemory& memory = adapter_memory_[static_cast<size_t>(adapter)];
  memory.loaded = false;
  memory.owned.clear();
  memory.owned.shrink_to_fit();
}

KvCache Qwen3Model::make_cache() const {
  return KvCache(config_.num_hidden_layers, config_.num_key_value_heads, config_.head_dim,
                 config_.max_position_embeddings, kv_cache_);
}

void Qwen3Model::save(const std::string& source_dir, const std::string& out_dir) const {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  // Written from the model's own memory, a matrix at a time: a second copy
  // of a 17 GB model would not fit where the model does.
  std::vector<TensorSource> tensors;
  std::optional<WeightFormat> quant;
  auto bytes_from = [](const void* p, size_t n) {
    return [p, n](std::ostream& out) { out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); };
  };
  for_each_tensor(
      config_, layout_, weights_,
      [&](const std::string& name, const WeightMatrix& w, int64_t rows, int64_t cols, Quantizable) {
        if (w.quantized() && quant && *quant != w.format)
          fail("cannot save a model that mixes ", weight_format_name(*quant), " and ", weight_format_name(w.format),
               " matrices");
        if (w.quantized()) quant = w.format;
        if (w.quantized()) {
          tensors.push_back({name,
                             DType::U8,
                             {quant_stored_rows(w.quant_format(), rows), static_cast<int64_t>(w.row_bytes())},
                             w.bytes(),
                             bytes_from(w.data, w.bytes())});
          return;
        }
        // Float matrices are panels in memory, rows in the file.
        tensors.push_back({name,
                           float_dtype(w.format),
                           {rows, cols},
                           static_cast<uint64_t>(rows) * w.row_bytes(),
                           [&w, rows](std::ostream& out) {
                             std::vector<char> row(w.row_bytes());
                             for (int64_t r = 0; r < rows; ++r) {
                               copy_float_row(w, r, row.data());
                               out.write(row.data(), static_cast<std::streamsize>(row.size()));
                             }
                           }});
      },
      [&](const std::string& name, const std::vector<float>& v, int64_t n) {
        tensors.push_back({name, DType::F32, {n}, v.size() * sizeof(float), bytes_from(v.data(), v.size() * 4)});
      });
  write_safetensors(replaced_file(out_dir, "model.safetensors"), tensors);

  nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_text_file(source_dir + "/config.json"));
  if (quant)
    config["quantization_config"] = {
        {"quant_method", "qinfer"},
        {"format", weight_format_name(*quant)},
        {"version", kQuantLayoutVersion},
        {"block_size", kQuantBlock},
        {"layout",
         "U8 [rows padded to 8, row bytes]: groups of 8 rows, per 32-weight block their 8 F16 scales, then "
         "their codes interleaved 4 bytes at a time (ops/quant.h)"}};
  else
    config.erase("quantization_config");
  write_file(replaced_file(out_dir, "config.json"), config.dump(2) + "\n");
  // Everything else the checkpoint carries goes along (tokenizer files, chat_template.jinja, README, LICENSE),
  // weights in any format excepted.
  for (const auto& entry : fs::directory_iterator(source_dir)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    const bool weights = ext == ".safetensors" || name == "model.safetensors.index.json" || ext == ".bin" ||
                         ext == ".pt" || ext == ".pth" || ext == ".gguf" || ext == ".h5" || ext == ".msgpack";
    if (entry.is_regular_file() && !weights && name != "config.json" && name[0] != '.')
      fs::copy_file(entry.path(), replaced_file(out_dir, name));
  }
}

}  // namespace qinfer
