// Qwen3ForCausalLM (and Qwen3MoeForCausalLM, its sparse MLP in model/sparse_mlp): config, weights read in place from
// the checkpoint (or converted once at load; model/qwen3_weights.cpp), and one forward pass written top to bottom
// (model/qwen3.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/safetensors.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/lora.h"
#include "model/sparse_mlp.h"
#include "ops/matmul.h"
#include "util/owned_bytes.h"
#include "util/thread_pool.h"

namespace qinfer {

struct Qwen3Layer {
  std::vector<float> input_norm, post_attention_norm, q_norm, k_norm;  // small: widened to f32 at load
  WeightMatrix q_proj, k_proj, v_proj, o_proj;
  WeightMatrix gate_proj, up_proj, down_proj;  // a dense layer's MLP
  SparseMlp sparse_mlp;                        // a sparse layer's (Qwen3-MoE); no experts in a dense one
  LoraLayer lora;                              // the adapters' updates of the projections (none without --lora)
};

struct Qwen3Weights {
  WeightMatrix embed_tokens;  // [vocab, hidden]; rows are dequantized on lookup when quantized
  std::vector<Qwen3Layer> layers;
  std::vector<float> final_norm;
  WeightMatrix lm_head;  // the embedding matrix itself when tie_word_embeddings
  WeightMatrix score;    // a sequence classifier's head, [labels, hidden] (Qwen3ForSequenceClassification)
};

// How a checkpoint names its tensors: Qwen3ForCausalLM's "model.layers.0..."
// and lm_head, or a Qwen3Model backbone saved alone ("layers.0...", as
// sentence-transformers saves Qwen3-Embedding), whose lm_head is the tied
// embedding or none at all.
struct Qwen3Layout {
  std::string prefix = "model.";
  bool lm_head = true;  // lm_head.weight is stored (read unless tie_word_embeddings)
  // Rows of score.weight, a Qwen3ForSequenceClassification head (as
  // Qwen3-Reranker converted to one: "yes" minus "no"); 0: none.
  int64_t score_rows = 0;
};

struct LoadOptions {
  // Convert every weight matrix to this format at load (Q8/Q4: quantize,
  // see ops/quant.h); nullopt keeps each as stored. Matrices whose width is
  // not a multiple of 32 stay as stored when Q8/Q4 is asked for, and so do
  // the routers of a mixture of experts (which experts run depends on them).
  std::optional<WeightFormat> weights;
  DType kv_cache = DType::F32;  // F32, F16 or BF16 (see KvCache)
  int threads = 0;              // for the conversion; <= 0: all hardware threads
  // bf16 weights only (Error otherwise): every matrix multiplies with the
  // activation rounded to bf16, by pairs as AVX512-BF16 does
  // (WeightMatrix::bf16_products), in prefill and decode alike: faster
  // prefill where the CPU has the instruction, no longer transformers' exact
  // arithmetic (--fast-prefill; bench --quality measures how far).
  bool bf16_products = false;
  // PEFT LoRA adapter directories (model/lora.h), each one's updates added
  // to every request's projections, in this order.
  std::vector<std::string> lora_adapters;
  // Named adapters (vLLM's --lora-modules name=path): each one's updates go
  // to the sequences that ask for it (BatchSeq::adapter, its index here),
  // after those of lora_adapters.
  std::vector<NamedLoraAdapter> lora_modules;
};

// "bf16", "f16", "f32", "q8", "q4" (Error otherwise); "auto" is nullopt (as stored).
std::optional<WeightFormat> parse_weight_format(const std::string& name);
// "f32", "f16", "bf16" (Error otherwise).
DType parse_kv_dtype(const std::string& name);

class Qwen3Model {
 public:
  // Loads config.json and the safetensors weights of a checkpoint directory,
  // checking every tensor the config needs is there with the implied shape.
  // Quantized checkpoints written by save_quantized() load in place too.
  static std::unique_ptr<Qwen3Model> load(const std::string& dir, const LoadOptions& options = {});

  const Qwen3Config& config() const { return config_; }
  const Qwen3Weights& weights() const { return weights_; }
  const std::vector<float>& rope_inv_freq() const { return rope_inv_freq_; }
  float rope_scale() const { return rope_scale_; }  // YaRN's attention factor on cos/sin; 1 otherwise
  size_t weight_bytes() const { return weight_bytes_; }
  const Qwen3Layout& layout() const { return layout_; }
  // False for an untied backbone without lm_head.weight: it gives hidden
  // states (embeddings), not logits.
  bool has_lm_head() const { return weights_.lm_head.data != nullptr; }
  // A backbone saved alone with no lm_head of its own (Qwen3-Embedding, tied
  // or not): an embedding model, whose logits (through a tied embedding)
  // mean nothing to a reranker.
  bool embeds_only() const { return layout_.prefix.empty() && !layout_.lm_head && !has_classifier(); }
  // A sequence classifier's head (score.weight): its labels' logits of a
  // final hidden state (BatchSeq::Logits::Hidden), as HF's
  // Qwen3ForSequenceClassification scores the last position. Error without one.
  bool has_classifier() const { return weights_.score.data != nullptr; }
  std::vector<float> classify(std::span<const float> hidden) const;
  DType kv_cache_dtype() const { return kv_cache_; }
  // The checkpoint's tensors the model does not read (a hunt finding: a
  // Qwen2-MoE's shared expert was dropped without a word; transformers warns
  // "weights ... were not used"), by name.
  const std::vector<std::string>& unused_tensors() const { return unused_tensors_; }
  // Every named adapter the model has had, by index (BatchSeq::adapter):
  // LoadOptions::lora_modules in order, then those add_adapter added.
  // `listed`: its name finds it (remove_adapter unlists it at once, and the
  // name stays for the requests still running with it). A snapshot, taken
  // under a lock: HTTP threads read it while the engine thread adds.
  struct AdapterName {
    std::string name;
    bool listed = true;
  };
  std::vector<AdapterName> adapter_names() const;
  // The listed adapter called `name`; nullopt when there is none.
  std::optional<int32_t> find_adapter(const std::string& name) const;
  // Error unless `adapter` is -1 (none) or a named adapter whose updates are
  // still in the model (not dropped by drop_adapter).
  void check_adapter(int32_t adapter) const;

  // Adapters added and removed while the model serves (vLLM's
  // /v1/load_lora_adapter): read_adapter on any thread (it only reads the
  // model's config); add_adapter and drop_adapter only while no forward
  // pass runs (EngineLoop::between_steps); unlist_adapter on any thread.
  // An index is never reused, so a prefix-cache block keyed by a removed
  // adapter's index is never matched again.
  struct ReadAdapter {
    std::vector<LoraLayer> layers;
    std::vector<OwnedBytes> owned;
  };
  ReadAdapter read_adapter(const std::string& dir) const;  // Error naming the file at fault
  // Its index; Error when a listed adapter (or the model) already has the
  // name, unless `replaced` is given: a listed adapter of that name is then
  // unlisted in the same breath (no request finds neither) and its index
  // set there, for drop_adapter once its requests are done (vLLM's
  // load_inplace).
  int32_t add_adapter(const std::string& name, ReadAdapter adapter, std::optional<int32_t>* replaced = nullptr);
  // The adapter a request that resolved its name to `adapter` runs with: that
  // one, or, where a load_inplace replaced it and it was dropped before the
  // request came in, its replacement (a review finding: such requests were
  // refused as "unloaded" though the name was served all along). The engine
  // thread's, as add_adapter.
  int32_t current_adapter(int32_t adapter) const;
  // Its name no longer finds it: the index it had, nullopt when no listed adapter has `name`.
  std::optional<int32_t> unlist_adapter(const std::string& name);
  // Frees its updates: no sequence may use it any more (check_adapter refuses it).
  void drop_adapter(int32_t adapter);

  KvCache make_cache() const;  // sized for the model's context length, grown on use

  // Writes the model as a checkpoint directory that load() maps in place:
  // model.safetensors with every quantized matrix as one U8 tensor in the
  // layout of ops/quant.h (Q8 rows; Q4 groups of 8 rows), the norms as F32; config.json
  // (copied from `source_dir`, with a quantization_config entry), and the
  // source's generation_config.json and tokenizer files when present.
  void save(const std::string& source_dir, const std::string& out_dir) const;

 private:
  Qwen3Config config_;
  Qwen3Layout layout_;
  Checkpoint checkpoint_;  // owns the mappings the weights point into
  std::vector<std::string> unused_tensors_;
  std::vector<OwnedBytes> owned_;  // float matrices as panels, converted (Q8/Q4) matrices
  Qwen3Weights weights_;
  std::vector<float> rope_inv_freq_;
  float rope_scale_ = 1.0f;
  size_t weight_bytes_ = 0;
  DType kv_cache_ = DType::F32;
  mutable std::mutex adapter_names_mu_;  // adapter_names_ is read by any thread
  std::vector<AdapterName> adapter_names_;
  // Per named adapter: whether its updates are in the layers, and the memory
  // they are read into (what drop_adapter frees). The engine thread's.
  struct AdapterMemory {
    bool loaded = true;
    std::vector<OwnedBytes> owned;
  };
  std::vector<AdapterMemory> adapter_memory_;
  std::vector<int32_t> replaced_by_;  // per named adapter: the one a load_inplace replaced it with (-1: none)
  void install_adapter(int32_t index, std::vector<LoraLayer>& layers);
};

// Per-step activations, reused between calls so decode does not allocate.
struct ForwardState {
  std::vector<float> x, h, q, k, v, attn, gate, up, logits;
  std::vector<float> hidden;  // the final hidden states asked for (Logits::Hidden), [rows, hidden_size]
  std::vector<int32_t> positions;
  std::vector<int32_t> row_adapter;     // each row's named adapter (-1: none)
  std::vector<AttentionSeq> attention;  // per sequence
  std::vector<int64_t> logit_rows;      // the rows whose logits are asked for
  std::vector<int64_t> hidden_rows;     // the rows whose final hidden states are asked for
  Batch single;                         // the one-sequence forward's batch
  std::vector<float> rope;              // cos/sin of every position of the step
  SparseMlpState sparse_mlp;
  LoraScratch lora;
};

// Runs the rows of a batch through the model, each sequence at its own
// positions, writing their keys/values into `kv` through their block tables
// (which must already hold the positions before each sequence's rows).
// Returns the logits the sequences ask for (Logits::Last: one row, All:
// every row, None: nothing), sequence after sequence, [rows, vocab_size];
// the final hidden states asked for (Logits::Hidden) are in state.hidden,
// sequence after sequence. Error when logits are asked of a model without
// lm_head.
// A row's logits do not depend on the other rows of the batch (the engine's
// batch invariance). Error when a token is outside the vocabulary or a block
// table does not cover its sequence.
std::span<const float> forward(const Qwen3Model& model, const Batch& batch, KvPool& kv, ForwardState& state,
                               ThreadPool& pool);

// One sequence: tokens at positions pos0 .. pos0+n-1, appending their
// keys/values to `cache` (which must already hold positions [0, pos0)).
// Error when a token is outside the vocabulary or the context length is exceeded.
// Returns the logits of the last position (vocab_size floats, in state.logits),
// or of every position when all_logits is set ([n, vocab_size]).
std::span<const float> forward(const Qwen3Model& model, std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                               ForwardState& state, ThreadPool& pool, bool all_logits = false);

}  // namespace qinfer
