// qinfer: run Qwen3 language models from a Hugging Face checkpoint directory.
#include <cstdio>
#include <exception>

#include "build_info.h"
#include "commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "qinfer: a C++ inference engine for Qwen3 models, loading Hugging Face checkpoints as downloaded"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.set_version_flag("--version", [] { return qinfer::cli::version_text(); },
                       "Print the version, git commit and the SIMD target chosen for this CPU");
  qinfer::cli::add_generate_command(app);
  qinfer::cli::add_chat_command(app);
  qinfer::cli::add_make_test_model_command(app);
  qinfer::cli::add_bench_command(app);
  qinfer::cli::add_quantize_command(app);
  qinfer::cli::add_tokenize_command(app);
  qinfer::cli::add_template_command(app);
  qinfer::cli::add_batch_command(app);
  qinfer::cli::add_bench_batch_command(app);
  qinfer::cli::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const qinfer::Error& e) {
    std::fprintf(stderr, "qinfer: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qinfer: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
