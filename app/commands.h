// Each subcommand of the qinfer CLI registers itself on the root app.
// Subcommands are thin frontends over the runtime layer.
#pragma once
#include <CLI/CLI.hpp>

namespace qinfer::cli {

void add_generate_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_make_test_model_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_template_command(CLI::App& app);
void add_batch_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_rerank_command(CLI::App& app);
void add_bench_batch_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_run_batch_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);

}  // namespace qinfer::cli
