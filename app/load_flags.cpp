#include "load_flags.h"

#include "ops/simd.h"
#include "thread_count.h"
#include "usage_error.h"
#include "util/error.h"

namespace qinfer::cli {

void LoadFlags::add_options(CLI::App* cmd) {
  cmd->add_option("-t,--threads", threads, "Threads; 0 = all hardware threads (more are capped)")
      ->capture_default_str();
  cmd->add_option("--weights", weights, "Weight format: auto (as stored), bf16, f16, f32, q8, q4 (converted at load)")
      ->capture_default_str();
  cmd->add_option("--kv", kv, "KV cache type: f32, f16, bf16")->capture_default_str();
  cmd->add_flag("--fast-prefill", fast_prefill,
                "bf16 weights: multiply with the activations rounded to bf16 (vdpbf16ps where the CPU has "
                "AVX512-BF16), in prefill and decode alike; faster, no longer exactly transformers' arithmetic");
  cmd->add_option("--lora", lora,
                  "A PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors), applied to every "
                  "request as PEFT applies it, unmerged; may be repeated (the updates add up)")
      ->allow_extra_args(false);
  cmd->add_option("--simd", simd,
                  "Run the kernels of this SIMD target or a lesser one compiled in (`qinfer --version` lists them; "
                  "a -march=native build none below the host's best, the portable build every x86 target)");
}

LoadOptions LoadFlags::options() const {
  LoadOptions o;
  o.threads = thread_count(threads);
  try {
    o.weights = parse_weight_format(weights);
  } catch (const Error& e) {
    usage_fail("--weights: ", e.what());
  }
  try {
    o.kv_cache = parse_kv_dtype(kv);
  } catch (const Error& e) {
    usage_fail("--kv: ", e.what());
  }
  o.bf16_products = fast_prefill;
  o.lora_adapters = lora;
  if (simd && !simd::limit_target(*simd))
    usage_fail("--simd '", *simd, "'",
               ": not a SIMD target this binary can run on this CPU; it can run: ", simd::runnable_targets());
  return o;
}

}  // namespace qinfer::cli
