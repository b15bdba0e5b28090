// qinfer quantize: convert a checkpoint's weights to Q8 or Q4 once and save
// them, so loading maps the quantized weights in place instead of
// quantizing at every start.
#include <cstdio>

#include "commands.h"
#include "io/model_dir.h"
#include "model/checkpoint_quantization.h"
#include "model/qwen3.h"
#include "output_dir.h"
#include "thread_count.h"
#include "usage_error.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

void add_quantize_command(CLI::App& app) {
  struct Args {
    std::string model, to, out;
    int threads = 0;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Write a copy of a checkpoint with Q8 or Q4 weights (32-weight blocks, half scales; see docs/performance.md)");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory or hub id (with float weights)")->required();
  cmd->add_option("--to", a->to, "q8 or q4")->required();
  cmd->add_option("-o,--out", a->out,
                  "Output directory (created; an existing one only with --force; not the model's own)")
      ->required();
  cmd->add_option("-t,--threads", a->threads, "Threads; 0 = all hardware threads (more are capped)");
  cmd->add_flag("--force", a->force, "Overwrite the checkpoint files in an existing output directory");
  cmd->callback([a] {
    if (a->to != "q8" && a->to != "q4") usage_fail("--to must be q8 or q4, not '", a->to, "'");
    const std::string dir = resolve_model_dir(a->model);
    // Quantizing the dequantized weights again would add a second rounding
    // error on top of the first.
    if (const auto stored = stored_quant_format(dir + "/config.json"))
      fail(dir, " is already quantized (", *stored == QuantFormat::Q8 ? "q8" : "q4",
           "): quantize the original float checkpoint instead");
    OutputDir out(a->out, a->force, dir);
    Timer t;
    LoadOptions options;
    options.weights = parse_weight_format(a->to);
    options.threads = thread_count(a->threads);
    const auto model = Qwen3Model::load(dir, options);
    model->save(dir, out.staging());
    out.keep();
    std::printf("wrote %s (%s, %.0f MiB of weights, %.1f s)\n", a->out.c_str(), a->to.c_str(),
                static_cast<double>(model->weight_bytes()) / 1048576.0, t.seconds());
  });
}

}  // namespace qinfer::cli
