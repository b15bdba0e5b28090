// qinfer make-test-model: a random-weight checkpoint with real shapes, for benchmarks without a download.
#include <cstdio>

#include "commands.h"
#include "embedded_tokenizer.h"
#include "model/test_model.h"
#include "output_dir.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer::cli {

void add_make_test_model_command(CLI::App& app) {
  struct Args {
    std::string preset = "qwen3-0.6b", dtype = "bf16", out;
    uint64_t seed = 0;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "make-test-model",
      "Write a RANDOM-weight Qwen3 checkpoint (HF layout, real shapes, the Qwen3 tokenizer) for benchmarks");
  cmd->add_option("--preset", a->preset, "qwen3-0.6b or tiny")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "bf16, f16 or f32")->capture_default_str();
  cmd->add_option("--out", a->out, "Output directory (created; an existing one only with --force)")->required();
  cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  cmd->add_flag("--force", a->force, "Overwrite the checkpoint files in an existing --out directory");
  cmd->callback([a] {
    DType t;
    if (a->dtype == "bf16")
      t = DType::BF16;
    else if (a->dtype == "f16")
      t = DType::F16;
    else if (a->dtype == "f32")
      t = DType::F32;
    else
      fail("--dtype must be bf16, f16 or f32, not '", a->dtype, "'");
    const Qwen3Config config = test_model_preset(a->preset);
    check_output_dir(a->out, a->force);
    write_test_model(a->out, config, t, a->seed);
    write_file(a->out + "/tokenizer.json", embedded_tokenizer_json());
    write_file(a->out + "/tokenizer_config.json", embedded_tokenizer_config_json());
    std::printf("wrote %s (%s, %s, seed %llu; random weights)\n", a->out.c_str(), a->preset.c_str(), a->dtype.c_str(),
                static_cast<unsigned long long>(a->seed));
  });
}

}  // namespace qinfer::cli
