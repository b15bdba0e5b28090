// qinfer quantize: convert a checkpoint's weights to Q8 or Q4 once and save
// them, so loading maps the quantized weights in place instead of
// quantizing at every start.
#include <cstdio>

#include "commands.h"
#include "io/model_dir.h"
#include "model/qwen3.h"
#include "util/error.h"
#include "util/timer.h"

namespace qinfer::cli {

void add_quantize_command(CLI::App& app) {
  struct Args {
    std::string model, to, out;
    int threads = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Write a copy of a checkpoint with Q8 or Q4 weights (32-weight blocks, half scales; see docs/performance.md)");
  cmd->add_option("-m,--model", a->model, "Checkpoint directory or hub id")->required();
  cmd->add_option("--to", a->to, "q8 or q4")->required();
  cmd->add_option("-o,--out", a->out, "Output directory (created; must not be the model's own)")->required();
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all hardware threads)");
  cmd->callback([a] {
    if (a->to != "q8" && a->to != "q4") fail("--to must be q8 or q4, not '", a->to, "'");
    const std::string dir = resolve_model_dir(a->model);
    Timer t;
    LoadOptions options;
    options.weights = parse_weight_format(a->to);
    options.threads = a->threads;
    const auto model = Qwen3Model::load(dir, options);
    model->save(dir, a->out);
    std::printf("wrote %s (%s, %.0f MiB of weights, %.1f s)\n", a->out.c_str(), a->to.c_str(),
                static_cast<double>(model->weight_bytes()) / 1048576.0, t.seconds());
  });
}

}  // namespace qinfer::cli
