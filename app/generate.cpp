#include "commands.h"

namespace qinfer::cli {

void add_generate_command(CLI::App& app) {
  app.add_subcommand("generate", "Generate tokens from a prompt (in progress)");
}

}  // namespace qinfer::cli
