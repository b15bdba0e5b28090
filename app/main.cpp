// qinfer: run Qwen3 language models from a Hugging Face checkpoint directory.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "build_info.h"
#include "commands.h"
#include "standard_input.h"
#include "usage_error.h"
#include "util/error.h"

namespace {

// Exit statuses: 1 for a failure while running, 2 for a command line that does
// not parse (as grep, diff and most Unix tools).
constexpr int kExitFailure = 1, kExitUsage = 2;

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// When the first argument is meant as a subcommand but names none, an error
// that suggests the nearest one (CLI11 alone says "arguments were not expected").
bool reject_unknown_subcommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  const std::string given = argv[1];
  std::string nearest;
  size_t best = SIZE_MAX;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == given) return false;
    const size_t d = edit_distance(given, sub->get_name());
    if (d < best) best = d, nearest = sub->get_name();
  }
  std::fprintf(stderr, "qinfer: error: unknown command '%s'", given.c_str());
  if (best <= std::max<size_t>(2, given.size() / 3)) std::fprintf(stderr, "; did you mean '%s'?", nearest.c_str());
  std::fprintf(stderr, "\nRun 'qinfer --help' for the list of commands.\n");
  return true;
}

// Every integer flag reads decimal digits only, as llama.cpp's: CLI11 would
// take 010 as octal, 0x10 as hex, '' as 0, and clamp (or wrap, unsigned)
// what is out of range; and no number flag takes ''. One check on every
// option of every command, so none is missed.
void require_plain_numbers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type.rfind("FLOAT", 0) == 0)  // '': CLI11 would leave the option unset (its default, silently); 0x1p-3: hex
      opt->check(CLI::Validator(
          [](std::string& s) {
            return s.empty() || s.find_first_of("xX") != std::string::npos
                       ? "must be a number in decimal, not '" + s + "'"
                       : std::string();
          },
          ""));
    const bool is_unsigned = type.rfind("UINT", 0) == 0;
    if (!is_unsigned && type.rfind("INT", 0) != 0) continue;
    opt->transform(CLI::Validator(  // a transform: a check would run on a copy
        [is_unsigned](std::string& s) -> std::string {
          const size_t digits = !is_unsigned && !s.empty() && s[0] == '-';
          if (s.size() == digits || s.find_first_not_of("0123456789", digits) != std::string::npos)
            return std::string("must be a") + (is_unsigned ? " non-negative" : "n") + " integer in decimal, not '" + s +
                   "'";
          errno = 0;
          const std::string canonical = is_unsigned ? std::to_string(std::strtoull(s.c_str(), nullptr, 10))
                                                    : std::to_string(std::strtoll(s.c_str(), nullptr, 10));
          if (errno == ERANGE) return "'" + s + "' is out of range";
          s = canonical;  // no leading zero left for CLI11 to read as octal
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_plain_numbers(*sub);
}

// CLI11's "Could not convert: --draft = 99999999999" in this CLI's words:
// the digits passed require_plain_numbers, so they overflow a narrower type.
std::string conversion_message(const CLI::ConversionError& e) {
  const std::string what = e.what();
  constexpr std::string_view kPrefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(kPrefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(kPrefix.size(), eq - kPrefix.size()), value = what.substr(eq + 3);
  const bool digits = !value.empty() && value.find_first_not_of("-0123456789") == std::string::npos;
  return name + ": '" + value + (digits ? "' is out of range" : "' is not a number");
}

// A command line that does not parse, or holds a value out of range: the
// message, where to read the usage, status 2.
int usage_failure(CLI::App& app, const char* message) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands()) sub = s;
  std::fprintf(stderr, "qinfer: error: %s\nRun 'qinfer %s--help' for usage.\n", message,
               sub ? (sub->get_name() + " ").c_str() : "");
  return kExitUsage;
}

// Output that could not be written (a full disk, a closed pipe) is a failure,
// not a success that lost the text.
bool stdout_written() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  std::fprintf(stderr, "qinfer: error: writing to standard output failed: %s\n", std::strerror(errno));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  qinfer::cli::hold_closed_standard_streams();
  CLI::App app{"qinfer: a C++ inference engine for Qwen3 models, loading Hugging Face checkpoints as downloaded"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.set_version_flag(
      "--version", [] { return qinfer::cli::version_text(); },
      "Print the version, git commit and the SIMD target chosen for this CPU");
  qinfer::cli::add_generate_command(app);
  qinfer::cli::add_chat_command(app);
  qinfer::cli::add_make_test_model_command(app);
  qinfer::cli::add_bench_command(app);
  qinfer::cli::add_quantize_command(app);
  qinfer::cli::add_tokenize_command(app);
  qinfer::cli::add_template_command(app);
  qinfer::cli::add_batch_command(app);
  qinfer::cli::add_embed_command(app);
  qinfer::cli::add_rerank_command(app);
  qinfer::cli::add_bench_batch_command(app);
  qinfer::cli::add_serve_command(app);
  qinfer::cli::add_run_batch_command(app);
  qinfer::cli::add_perplexity_command(app);
  require_plain_numbers(app);
  if (reject_unknown_subcommand(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConversionError& e) {
    return usage_failure(app, conversion_message(e).c_str());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: output that could not be written is a failure too
      app.exit(e);
      return stdout_written() ? 0 : kExitFailure;
    }
    return usage_failure(app, e.what());
  } catch (const qinfer::cli::UsageError& e) {
    std::fflush(stdout);
    return usage_failure(app, e.what());
  } catch (const qinfer::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "qinfer: error: %s\n", e.what());
    return kExitFailure;
  } catch (const std::filesystem::filesystem_error& e) {  // a path we create or copy: the OS says what is wrong
    std::fflush(stdout);
    // A copy names both (a hunt finding: a full disk at the destination read as the source's error).
    if (e.path2().empty())
      std::fprintf(stderr, "qinfer: error: %s: %s\n", e.path1().c_str(), e.code().message().c_str());
    else
      std::fprintf(stderr, "qinfer: error: %s -> %s: %s\n", e.path1().c_str(), e.path2().c_str(),
                   e.code().message().c_str());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "qinfer: internal error: %s\n", e.what());
    return kExitFailure;
  }
  return stdout_written() ? 0 : kExitFailure;
}
