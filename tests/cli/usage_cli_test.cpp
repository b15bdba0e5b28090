// What a new user meets first: parser errors, unknown commands, thread counts,
// seeds, prompt mistakes, unwritable output, files that are not checkpoints.
// Each case runs the real binary and checks its exit status and message.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "ops/matmul_kernels.h"
#include "ops/simd.h"
#include "test_util.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;
using qinfer::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

std::string tiny() { return data_path("models/tiny"); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// stdout and stderr apart.
struct Outcome {
  int exit_code;
  std::string out, err;
};
Outcome run(const std::string& cmd) {
  ScratchDir dir("usage");
  const auto r = run_command(cmd + " 2> " + dir.file("err"));
  return {r.exit_code, r.output, read_file(dir.file("err"))};
}

// A copy of tiny (files linked, not copied) without the files named in `without`.
void link_tiny(const std::string& to, std::initializer_list<const char*> without = {}) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(tiny())) {
    const std::string name = e.path().filename().string();
    if (std::find_if(without.begin(), without.end(), [&](const char* w) { return name == w; }) == without.end())
      fs::create_symlink(e.path(), fs::path(to) / name);
  }
}

const std::string kPrompt = " --prompt-ids 785,6722,315,9625,374";

}  // namespace

TEST(UsageCli, ParserErrorsSayQinferErrorAndExit2) {
  for (const std::string args : {"generate -m x --bogus", "generate --prompt-ids 1", "", "generate -m x -n abc"}) {
    const Outcome r = run(qinfer_binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("qinfer: error: ", 0), 0u) << args << "\n" << r.err;
  }
  const Outcome r = run(qinfer_binary() + " generate -m x --bogus");
  EXPECT_NE(r.err.find("qinfer generate --help"), std::string::npos) << r.err;
  EXPECT_EQ(run(qinfer_binary() + " generate --help").exit_code, 0);
}

// Hunt findings: CLI11 read integer flags with base 0 (-n 010 made 8 tokens,
// -n 0x10 16), took '' as 0 (or left a float flag at its default), clamped
// or wrapped what was out of range (--max-body -1 was unlimited), and
// --logprobs -1 answered with a 309-digit bound.
TEST(UsageCli, NumbersAreDecimalAndWhole) {
  for (const std::string args : {"-n 0x10", "-n ''", "-n 99999999999999999999", "-t ''", "--ctx 1e3", "--temp ''",
                                 "--seed -1", "--logprobs -1 --json", "-n +5"}) {
    const Outcome r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_LT(r.err.size(), 200u) << args << "\n" << r.err;
  }
  for (const std::string cmd : {"serve -m x --max-body -1", "make-test-model --preset tiny --out x --seed -1"}) {
    const Outcome r = run(qinfer_binary() + " " + cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("must be a non-negative integer in decimal, not '-1'"), std::string::npos) << r.err;
  }
  // Hunt findings: a value past a 32-bit flag's range or a word for a number said "Could not convert: ...";
  // a float flag took hexadecimal (0x1p-3 ran at temperature 0.125) where integer flags refuse it.
  const std::pair<std::string, std::string> worded[] = {
      {" generate" + kPrompt + " --draft 99999999999", "--draft: '99999999999' is out of range"},
      {" batch --kv-mem abc < /dev/null", "--kv-mem: 'abc' is not a number"},
      {" generate" + kPrompt + " --temp 0x1p-3", "must be a number in decimal, not '0x1p-3'"}};
  for (const auto& [args, message] : worded) {
    const Outcome r = run(qinfer_binary() + args + " -m " + tiny());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
  const Outcome octal =
      run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 010 --temp 0 --ignore-eos --json");
  ASSERT_EQ(octal.exit_code, 0) << octal.err;
  EXPECT_EQ(json::parse(octal.out)["ids"].size(), 10u) << "ten, not octal eight";
}

TEST(UsageCli, UnknownCommandSuggestsTheNearest) {
  Outcome r = run(qinfer_binary() + " generat -m x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("qinfer: error: unknown command 'generat'; did you mean 'generate'?"), std::string::npos)
      << r.err;
  r = run(qinfer_binary() + " tokenise");
  EXPECT_NE(r.err.find("did you mean 'tokenize'?"), std::string::npos) << r.err;
  r = run(qinfer_binary() + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << "nothing is near: " << r.err;
}

TEST(UsageCli, ThreadsAreValidatedAndCappedAtTheHardware) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Outcome r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 2 --temp 0 --json -t 100000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["threads"], hardware);
  EXPECT_NE(r.err.find("-t 100000 is more than the " + std::to_string(hardware) + " hardware threads"),
            std::string::npos)
      << r.err;
  r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 2 --temp 0 --json -t 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["threads"], hardware) << "0 is every hardware thread";
  EXPECT_TRUE(r.err.empty()) << r.err;
  // Every command that computes shares the flag; serve must refuse it before it listens (timeout: it would serve).
  for (const std::string& cmd : {" generate" + kPrompt, std::string(" chat"), std::string(" bench -p 4 -n 2"),
                                 std::string(" batch"), std::string(" run-batch"),
                                 std::string(" bench-batch --parallel 1 -p 4 -n 2"), std::string(" serve --port 0")}) {
    r = run("timeout 60 " + qinfer_binary() + cmd + " -m " + tiny() + " -t -1 < /dev/null");
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("-t -1: the thread count must be at least 1"), std::string::npos) << cmd << r.err;
  }
}

// --simd runs the kernels of a lesser target than the CPU's best (in a
// -march=native build the CPU's best is the only one compiled in).
TEST(UsageCli, SimdTakesARunnableTargetByNameOrNamesThem) {
  const std::string runnable = qinfer::simd::runnable_targets();
  const std::string least = runnable.substr(runnable.rfind(' ') + 1);
  std::string lower = least;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Outcome r = run(qinfer_binary() + " bench -m " + tiny() + " -p 4 -n 2 --reps 1 --json --simd " + lower);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["simd_target"], least);
  EXPECT_NE(j["simd_compiled"].get<std::string>().find(least), std::string::npos);
  for (const std::string& cmd :
       {" generate" + kPrompt, std::string(" bench -p 4 -n 2"), std::string(" serve --port 0")})
    for (const std::string target : {"avx9", ""}) {  // "": a hunt finding, it ran the default
      r = run("timeout 60 " + qinfer_binary() + cmd + " -m " + tiny() + " --simd '" + target + "' < /dev/null");
      EXPECT_EQ(r.exit_code, 2) << cmd;
      EXPECT_NE(r.err.find("--simd '" + target +
                           "': not a SIMD target this binary can run on this CPU; it can run: " + runnable),
                std::string::npos)
          << cmd << r.err;
    }
}

// --fast-prefill: bench says it ran and which products; generate runs with
// it; weights that are not bf16 are an error naming the flag and the format.
TEST(UsageCli, FastPrefillRunsOnBf16WeightsAndRefusesOthers) {
  Outcome r = run(qinfer_binary() + " bench -m " + tiny() + " -p 4 -n 2 --reps 1 --json --fast-prefill");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["fast_prefill"], true);
  EXPECT_EQ(j["weights"], "bf16");
  EXPECT_EQ(j["bf16_products"], qinfer::kernels::bf16_product_path());
  EXPECT_EQ(j["amx"],
            qinfer::kernels::amx_prefill() ? "on" : std::string("off (") + qinfer::kernels::amx_status() + ")");
  r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 4 --temp 0 --fast-prefill");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* weights : {"q8", "f32"}) {
    r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 4 --fast-prefill --weights " + weights);
    EXPECT_EQ(r.exit_code, 1) << weights;
    EXPECT_NE(r.err.find(std::string("--fast-prefill multiplies bf16 weights, and model.embed_tokens.weight is ") +
                         weights + ": load the weights as bf16 (--weights bf16)"),
              std::string::npos)
        << r.err;
  }
}

TEST(UsageCli, UnseededRunsDifferAndThePrintedSeedReproduces) {
  const std::string base =
      qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 12 --temp 1 --top-k 0 --ignore-eos --json";
  const json a = json::parse(run(base).out), b = json::parse(run(base).out);
  ASSERT_TRUE(a["seed"].is_number_unsigned());
  EXPECT_NE(a["seed"], b["seed"]) << "each run draws its own seed";
  const json again = json::parse(run(base + " --seed " + std::to_string(a["seed"].get<uint64_t>())).out);
  EXPECT_EQ(again["ids"], a["ids"]);
  EXPECT_EQ(again["seed"], a["seed"]);
  const json max = json::parse(run(base + " --seed 18446744073709551615").out);
  EXPECT_EQ(max["seed"].get<uint64_t>(), UINT64_MAX);
  for (const char* bad : {"-1", "18446744073709551616", "1e3", "x"}) {
    const Outcome r = run(base + " --seed " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--seed: "), std::string::npos) << bad << ": " << r.err;
  }
}

TEST(UsageCli, WithoutGenerationConfigDecodingIsGreedyAndSaysSo) {
  ScratchDir dir("nogen");
  link_tiny(dir.file("m"), {"generation_config.json"});
  const Outcome r = run(qinfer_binary() + " generate -m " + dir.file("m") + kPrompt + " -n 8 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no generation_config.json: greedy decoding, as transformers does"), std::string::npos)
      << r.err;
  const Outcome greedy =
      run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 8 --ignore-eos --json --temp 0");
  EXPECT_EQ(json::parse(r.out)["ids"], json::parse(greedy.out)["ids"]);
}

// A hunt finding: generation_config.json's eos_token_id outside the vocabulary
// was accepted (generation never stopped there; config.json's is refused too).
TEST(UsageCli, AnEosIdOutsideTheVocabularyIsRefusedNamingTheFileAndField) {
  ScratchDir dir("eos-vocab");
  link_tiny(dir.file("m"), {"generation_config.json"});
  std::ofstream(dir.file("m/generation_config.json")) << R"({"eos_token_id": [151645, 999999999]})";
  const Outcome r = run(qinfer_binary() + " generate -m " + dir.file("m") + kPrompt + " -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(dir.file("m") +
                       "/generation_config.json: field 'eos_token_id' holds token id 999999999, outside the model's "
                       "vocabulary [0, 151936)"),
            std::string::npos)
      << r.err;
}

TEST(UsageCli, EachPromptMistakeHasItsOwnMessage) {
  ScratchDir dir("prompt");
  const std::string gen = qinfer_binary() + " generate -m " + tiny() + " --temp 0 --json";
  // Status 1: the run failed; 2: the command line holds a value out of range.
  auto expect_error = [&](const std::string& args, const std::string& message, int status = 1) {
    const Outcome r = run(gen + " " + args);
    EXPECT_EQ(r.exit_code, status) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  };
  expect_error("-p ''", "the prompt is empty (-p \"\")", 2);
  expect_error("--prompt-file " + dir.path(), dir.path() + ": is a directory, not a file");
  // A hunt finding: an empty path was ": cannot open", naming neither the flag nor what was wrong.
  expect_error("--prompt-file ''", "--prompt-file is empty: give the path of the file", 2);
  expect_error("--prompt-file " + dir.file("none"),
               "--prompt-file: " + dir.file("none") + ": cannot open: No such file or directory");
  std::ofstream(dir.file("empty.txt")).close();
  expect_error("--prompt-file " + dir.file("empty.txt"), "empty.txt: the prompt is empty");
  expect_error("--prompt-file - < /dev/null", "--prompt-file - (standard input): the prompt is empty");
  expect_error("--prompt-ids ''", "--prompt-ids is empty", 2);
  // Hunt findings: invalid UTF-8 was reported by the tokenizer, naming neither flag nor file.
  expect_error("-p \"$(printf 'ab\\377')\"", "the prompt (-p) is not valid UTF-8 (byte offset 2)");
  std::ofstream(dir.file("bad.txt")) << "ok \xC3";
  expect_error("--prompt-file " + dir.file("bad.txt"),
               "--prompt-file " + dir.file("bad.txt") + " is not valid UTF-8 (byte offset 3)");
  expect_error("-p x --prompt-ids 1", "exactly one of", 2);
  expect_error(kPrompt + " -n 4 --ctx 5", "the prompt (5 tokens) does not fit the context of 5 tokens");
  // A hunt finding: a huge prompt was encoded whole (minutes, gigabytes) before this refusal.
  {
    std::ofstream huge(dir.file("huge.txt"));
    for (int i = 0; i < (1 << 16); ++i) huge << " word";
  }
  expect_error("--prompt-file " + dir.file("huge.txt") + " --ctx 64",
               "the prompt (more than 64 tokens) does not fit the context of 64 tokens");
  expect_error(kPrompt + " --ctx 50000", "--ctx 50000 is more than the model's context of 40960 tokens");
  expect_error(kPrompt + " -n 0", "-n 0: give at least 1 token, or -1", 2);
  expect_error(kPrompt + " --ctx 8 -n 4", "plus -n 4 exceeds the context length of 8 tokens; use -n 3 or less");

  std::ofstream(dir.file("p.txt")) << "The capital of France is";
  const Outcome from_stdin = run(gen + " --prompt-file - < " + dir.file("p.txt"));
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(json::parse(from_stdin.out)["prompt_ids"], json::array({785, 6722, 315, 9625, 374}));
}

TEST(UsageCli, MinusOneGeneratesUntilTheContextIsFull) {
  const Outcome r =
      run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " --ctx 12 -n -1 --temp 0 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["ids"].size(), 7u) << "12 tokens: 5 prompt + 7 generated, as -n 7 is the most --ctx 12 allows";
  EXPECT_EQ(j["finish_reason"], "length");
  const Outcome text =
      run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " --ctx 12 -n -1 --temp 0 --ignore-eos");
  EXPECT_NE(text.err.find("length (the context is full)"), std::string::npos) << text.err;
}

TEST(UsageCli, EveryWriteIsChecked) {
  ScratchDir dir("writes");
  const std::string gen = qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 4 --temp 0";
  // --help and --version: hunt findings (exit 0 although nothing was written).
  for (const std::string& args :
       {gen, gen + " --json", qinfer_binary() + " tokenize -m " + tiny() + " hello", qinfer_binary() + " --version",
        qinfer_binary() + " --help", qinfer_binary() + " generate --help"}) {
    const Outcome r = run(args + " > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_NE(r.err.find("qinfer: error: writing to standard output failed: No space left on device"),
              std::string::npos)
        << args << ": " << r.err;
  }
  // A review finding: generate went on to -n after its writes failed (hours for -n -1 on a real model). It stops at
  // the first: its summary of 20000 tokens never comes.
  const Outcome stopped =
      run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 20000 --temp 0 --ignore-eos > /dev/full");
  EXPECT_EQ(stopped.exit_code, 1);
  EXPECT_NE(stopped.err.find("writing to standard output failed"), std::string::npos) << stopped.err;
  EXPECT_EQ(stopped.err.find("20000 tokens"), std::string::npos) << stopped.err;
  // batch too: its first result's write fails, and the second request (20000 tokens) is not run to its end.
  std::ofstream(dir.file("two.jsonl")) << R"({"prompt": "a", "max_tokens": 1})"
                                       << "\n"
                                       << R"({"prompt": "b", "max_tokens": 20000, "ignore_eos": true})"
                                       << "\n";
  const Outcome batch = run(qinfer_binary() + " batch -m " + tiny() + " < " + dir.file("two.jsonl") + " > /dev/full");
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_NE(batch.err.find("writing to standard output failed: No space left on device"), std::string::npos)
      << batch.err;
  EXPECT_EQ(batch.err.find("[2 requests"), std::string::npos) << batch.err;
  Outcome r = run(gen + " --json --logits-out /dev/full");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/dev/full: writing the logits failed (--logits-out)"), std::string::npos) << r.err;
  // A path that cannot be created fails before anything is generated.
  r = run(gen + " --logits-out " + dir.file("missing/l.f32"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot create the logits file (--logits-out): No such file or directory"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "nothing generated";
}

// Hunt findings: a directory as standard input read as an empty one (exit 0
// with no output), and output paths the OS refuses were "internal error"s.
TEST(UsageCli, StandardInputAndOutputPathsTheOsRefuses) {
  ScratchDir dir("os-refuses");
  for (const std::string& args :
       {" batch -m " + tiny(), " run-batch -m " + tiny(), " tokenize -m " + tiny() + " --jsonl",
        " template -m " + tiny(), " chat -m " + tiny(), " generate -m " + tiny() + " --prompt-file -"}) {
    const Outcome r = run(qinfer_binary() + args + " < " + dir.path());
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_NE(r.err.find("qinfer: error: standard input is a directory"), std::string::npos) << args << ": " << r.err;
  }
  std::ofstream(dir.file("afile")) << "x";
  const std::string quantize = qinfer_binary() + " quantize -m " + tiny() + " --to q8 -o ";
  Outcome r = run(quantize + "''");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("qinfer: error: the output directory is empty (\"\"): give the directory to write"),
            std::string::npos)
      << r.err;
  r = run(quantize + dir.file("afile/sub"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("qinfer: error: " + dir.file("afile/sub") + ": Not a directory"), std::string::npos) << r.err;
}

// Hunt findings: a closed (or write-only) standard input read as an empty one
// (exit 0, no output); with standard output closed, the next file opened
// took its number, so generate's text went into the --logits-out file (and
// serve's request log into a client's answer).
TEST(UsageCli, ClosedStandardStreamsAreNotTakenForEmptyOnesOrReused) {
  ScratchDir dir("closed-streams");
  for (const std::string& args :
       {" batch -m " + tiny(), " run-batch -m " + tiny(), " tokenize -m " + tiny() + " --jsonl",
        " tokenize -m " + tiny() + " --decode", " template -m " + tiny(), " chat -m " + tiny(),
        " generate -m " + tiny() + " --prompt-file -"})
    for (const char* closing : {" <&-", " 0> "}) {
      const Outcome r = run(qinfer_binary() + args + closing + (closing[1] == '0' ? dir.file("w") : ""));
      EXPECT_EQ(r.exit_code, 1) << args << closing;
      EXPECT_NE(r.err.find("qinfer: error: standard input is not open for reading"), std::string::npos)
          << args << closing << ": " << r.err;
    }
  const Outcome r = run(qinfer_binary() + " generate -m " + tiny() + kPrompt + " -n 3 --temp 0 --logits-out " +
                        dir.file("logits.f32") + " >&-");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("writing to standard output failed: Bad file descriptor"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(dir.file("logits.f32")), 151936u * 4) << "the logits alone";
}

TEST(UsageCli, FilesThatAreNotCheckpointsAreNamedSo) {
  ScratchDir dir("gguf");
  std::ofstream(dir.file("qwen3-0.6b-q4_0.gguf")) << "GGUF....";
  std::ofstream(dir.file("model.bin")) << "GGUF\x03";
  std::ofstream(dir.file("notes.txt")) << "hello";
  for (const char* f : {"qwen3-0.6b-q4_0.gguf", "model.bin"}) {
    const Outcome r = run(qinfer_binary() + " generate -m " + dir.file(f) + " -p hi");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("GGUF is not supported; use the Hugging Face checkpoint directory"), std::string::npos)
        << f << ": " << r.err;
  }
  const Outcome r = run(qinfer_binary() + " generate -m " + dir.file("notes.txt") + " -p hi");
  EXPECT_NE(r.err.find("notes.txt: is a file; -m takes a checkpoint directory"), std::string::npos) << r.err;
}

TEST(UsageCli, HubCacheWarnsWhenRefsMainNamesAMissingSnapshot) {
  ScratchDir dir("hub");
  const std::string repo = dir.file("models--Org--Tiny");
  fs::create_directories(repo + "/refs");
  std::ofstream(repo + "/refs/main") << "0123abc\n";
  link_tiny(repo + "/snapshots/fedcba9");
  const Outcome r = run("HF_HUB_CACHE=" + dir.path() + " " + qinfer_binary() + " generate -m Org/Tiny" + kPrompt +
                        " -n 2 --temp 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("refs/main names snapshot '0123abc', which is missing; taking the newest other snapshot"),
            std::string::npos)
      << r.err;
}

TEST(UsageCli, DecodeRefusesIdsOutsideTheVocabulary) {
  const Outcome r =
      run("echo '{\"ids\": [785, 999999]}' | " + qinfer_binary() + " tokenize -m " + tiny() + " --decode");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin line 1: token id 999999 is outside the model's vocabulary [0, 151936)"),
            std::string::npos)
      << r.err;
}

TEST(UsageCli, BenchChecksItsLimitsBeforeTiming) {
  auto expect_error = [&](const std::string& args, const std::string& message, int status = 1) {
    const Outcome r = run(qinfer_binary() + " bench -m " + tiny() + " " + args);
    EXPECT_EQ(r.exit_code, status) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.err.find("run 1"), std::string::npos) << "refused before timing: " << r.err;
  };
  expect_error("-p 40000 -n 1000", "-p 40000 plus -n 1000 exceeds the model's context of 40960 tokens");
  // A hunt finding: the sum overflowed and the check passed.
  expect_error("-p 4 -n 9223372036854775807", "plus -n 9223372036854775807 exceeds the model's context");
  expect_error("-p 4 -n 2 --quality 50000", "--quality 50000 exceeds the model's context of 40960 tokens");
  expect_error("-p 4 -n 2 --quality -1", "--quality -1: give a number of prompt tokens", 2);
  const Outcome r = run(qinfer_binary() + " bench -m " + tiny() + " -p 4 -n 2 --reps 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["weights"], "bf16") << "the format in use, not 'auto'";
  EXPECT_TRUE(j["qinfer_version"].is_string());
}

// Hunt findings: flags whose sizes wrapped or had no bound. A KV pool of
// 2^24 blocks of 2^30 positions (2^64 bytes, wrapped to 0) segfaulted at the
// first request; --parallel near 2^63 made the queue's capacity negative (400
// to every request); -p + -n of bench-batch wrapped past the context check;
// --kv-mem -5 or nan was the default pool; serve --ctx over the model's
// maximum was taken silently (generate refuses it).
// serve --lora-modules NAME=DIR: a spec without a name or a directory, the
// served model's own name or a name given twice is a usage error before the
// server listens; an adapter that is not there fails the load, naming it.
TEST(UsageCli, LoraModulesNeedANameOfTheirOwnAndAnAdapter) {
  const std::string serve =
      "timeout 60 " + qinfer_binary() + " serve -m " + tiny() + " --port 0 --served-model-name tiny";
  const struct {
    std::string args, message;
    int status;
  } cases[] = {
      {" --lora-modules sql", "--lora-modules 'sql': give NAME=DIR", 2},
      {" --lora-modules =/tmp", "--lora-modules '=/tmp': give NAME=DIR", 2},
      {" --lora-modules sql=", "--lora-modules 'sql=': give NAME=DIR", 2},
      {" --lora-modules tiny=/tmp", "'tiny' is the model's own name", 2},
      {" --lora-modules a=/tmp a=/tmp", "two adapters are named 'a'", 2},
      {" --lora-modules sql=/nonexistent-adapter", "/nonexistent-adapter: no adapter_model.safetensors", 1},
  };
  for (const auto& c : cases) {
    const Outcome r = run(serve + c.args);
    EXPECT_EQ(r.exit_code, c.status) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST(UsageCli, EngineSizesThatWrapOrExceedTheirBoundsAreRefused) {
  const std::string line = "echo '{\"prompt\": \"hi\", \"max_tokens\": 2}' | ";
  struct Case {
    std::string cmd, message;
    int status;  // 2: a value out of range on the command line; 1: too large for this model or machine
  };
  const std::vector<Case> cases = {
      {line + qinfer_binary() + " batch -m " + tiny() + " --kv-blocks 16777216 --block-size 1073741824",
       "a KV pool of 16777216 blocks of 1073741824 positions is larger than the address space", 1},
      {line + qinfer_binary() + " batch -m " + tiny() + " --parallel 16777216",
       "--parallel must be between 1 and 65536", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --parallel 9223372036854775800",
       "--parallel must be between 1 and 65536", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --max-queue 9223372036854775800",
       "--max-queue must be between 0 and 1048576", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --kv-mem -5", "--kv-mem must be a positive number of MiB",
       2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --kv-mem nan", "--kv-mem must be a positive number of MiB",
       2},
      {line + qinfer_binary() + " batch -m " + tiny() + " --kv-mem nan", "--kv-mem must be a positive number of MiB",
       2},
      {line + qinfer_binary() + " batch -m " + tiny() + " --kv-mem 1 --kv-blocks 4",
       "pass --kv-blocks or --kv-mem, not both", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --kv-mem 1e300", "more than the 16777216 KV blocks", 1},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --ctx 99999999",
       "--ctx 99999999 is more than the model's context of 40960", 1},
      {qinfer_binary() + " bench-batch -m " + tiny() + " --parallel 1 -p 4 -n 9223372036854775806",
       "-p + -n exceeds the context length of 40960", 1},
      // Hunt findings: these started a server (open to all with an empty key) or failed as runtime errors.
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --api-key ''", "--api-key is empty", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port -1", "--port must be between 0 and 65535, got -1", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 65536", "--port must be between 0 and 65535, got 65536", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --host ''", "--host is empty", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --max-body 0", "--max-body must be at least 1 byte", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --host 999.1.1.1", "not an address of this host", 1},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --draft 1025",
       "draft tokens must be between 0 (off) and 1024", 2},
      {line + qinfer_binary() + " batch -m " + tiny() + " --draft 4 --draft-max-ngram 1",
       "the longest n-gram to look up must be between the shortest (2)", 2},
      {"echo hi | " + qinfer_binary() + " chat -m " + tiny() + " --draft -3", "--draft -3", 2},
      // Hunt findings: these did nothing, or started a server no client could use.
      {qinfer_binary() + " generate -m " + tiny() + " -p hi -n 1 --draft-min-ngram 3",
       "--draft-min-ngram applies to prompt lookup's drafts, which are off: give --draft N too", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --api-key \"$(printf 'a\\nb')\"",
       "--api-key holds a control character", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --served-model-name ''", "--served-model-name is empty", 2},
      {qinfer_binary() + " run-batch -m " + tiny() + " -i /nonexistent -o -", "cannot read /nonexistent: No such file",
       1},
      {qinfer_binary() + " run-batch -m " + tiny() + " -i / -o -", "/ is a directory, not a file", 1},
      {"echo hi | " + qinfer_binary() + " run-batch -m " + tiny() + " -o /", "cannot write /: it is a directory", 1},
      {"echo hello world | " + qinfer_binary() + " perplexity -m " + tiny() + " -f - --ctx 100000",
       "--ctx 100000 is more than the model's 40959 positions", 1},  // too large for the model, as serve's --ctx
      {qinfer_binary() + " generate -m " + tiny() + " -p hi --ctx 2", "plus the default -n 128 exceeds", 1},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --http-threads 100000000",
       "--http-threads must be between 0 (--parallel + --max-queue + 16) and 16384, got 100000000", 2},
      {qinfer_binary() + " serve -m " + tiny() + " --port 0 --scheduling-policy lifo",
       "--scheduling-policy must be fcfs or priority, got 'lifo'", 2},
  };
  for (const Case& c : cases) {
    const Outcome r = run("timeout 60 " + c.cmd);
    EXPECT_EQ(r.exit_code, c.status) << c.cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.cmd << "\n" << r.err;
  }
}

// A hunt finding: when the system refused one of serve's HTTP threads (a
// process limit in a container), httplib's pool destroyed the threads it had
// started: std::terminate, exit 134, after "listening".
TEST(UsageCli, ServeThatCannotStartItsThreadsSaysSo) {
  if (::geteuid() != 0 || std::system("command -v setpriv > /dev/null && command -v prlimit > /dev/null") != 0)
    GTEST_SKIP() << "needs root (to run as nobody under a process limit, which root ignores), setpriv and prlimit";
  const Outcome r = run("timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups prlimit --nproc=40 " +
                        qinfer_binary() + " serve -m " + tiny() + " --port 0 --http-threads 100");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot start 100 HTTP threads (--http-threads"), std::string::npos) << r.err;
}

// A hunt finding: --logits-out naming one of the model's own files truncated
// it while it was mapped: SIGBUS, and a checkpoint of 0 bytes. A review
// finding: a LoRA adapter's files were not refused, nor any by run-batch -o
// (which wrote its results over a checkpoint's weights, exit 0).
TEST(UsageCli, OutputsRefuseTheFilesTheModelIsReadFrom) {
  ScratchDir dir("logits-self");
  const std::string model = dir.file("model");
  fs::create_directories(model);
  for (const auto& e : fs::directory_iterator(tiny())) fs::copy_file(e.path(), fs::path(model) / e.path().filename());
  fs::create_symlink(model + "/model.safetensors", dir.file("alias"));
  const auto size = fs::file_size(model + "/model.safetensors");
  for (const std::string& target : {model + "/model.safetensors", dir.file("alias"), model + "/config.json"}) {
    const Outcome r = run(qinfer_binary() + " generate -m " + model + kPrompt + " -n 1 --logits-out " + target);
    EXPECT_EQ(r.exit_code, 1) << target << "\n" << r.err;
    EXPECT_NE(r.err.find("; --logits-out would overwrite it"), std::string::npos) << r.err;
  }
  EXPECT_EQ(fs::file_size(model + "/model.safetensors"), size);
  const std::string adapter = dir.file("adapter");
  ASSERT_EQ(run(qinfer_binary() + " make-test-model --preset tiny --lora 4 --out " + adapter).exit_code, 0);
  const auto adapter_size = fs::file_size(adapter + "/adapter_model.safetensors");
  Outcome r = run(qinfer_binary() + " generate -m " + model + kPrompt + " -n 1 --lora " + adapter + " --logits-out " +
                  adapter + "/adapter_model.safetensors");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("adapter_model.safetensors; --logits-out would overwrite it"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(adapter + "/adapter_model.safetensors"), adapter_size);
  std::ofstream(dir.file("batch.jsonl"))
      << R"({"custom_id": "a", "method": "POST", "url": "/v1/completions", "body": {"prompt": "a", "max_tokens": 1}})"
      << "\n";
  r = run(qinfer_binary() + " run-batch -m " + model + " -i " + dir.file("batch.jsonl") + " -o " + model +
          "/model.safetensors");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("model.safetensors; -o would overwrite it"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(model + "/model.safetensors"), size);
  EXPECT_EQ(run(qinfer_binary() + " generate -m " + model + kPrompt + " -n 1 --logits-out " + dir.file("logits.bin"))
                .exit_code,
            0);
}

// Hunt findings: a chat template that was null or did not compile failed
// every command at load, also those that never use it (transformers compiles
// it when it is applied); and quantize left chat_template.jinja behind, so
// the quantized model lost its template.
TEST(UsageCli, ABrokenChatTemplateFailsOnlyChattingAndQuantizeKeepsTheJinjaFile) {
  ScratchDir dir("bad-template");
  json config = json::parse(read_file(tiny() + "/tokenizer_config.json"));
  for (const json& bad : {json(nullptr), json("{% if messages %}never closed")}) {
    const std::string model = dir.file(bad.is_null() ? "null" : "unclosed");
    link_tiny(model, {"tokenizer_config.json"});
    config["chat_template"] = bad;
    std::ofstream(model + "/tokenizer_config.json") << config.dump();
    const Outcome gen = run(qinfer_binary() + " generate -m " + model + " -p Hello -n 2 --temp 0");
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    const Outcome chat = run("echo Hi | " + qinfer_binary() + " chat -m " + model + " -n 2");
    EXPECT_EQ(chat.exit_code, 1) << chat.err;
    EXPECT_NE(chat.err.find("the model's chat template cannot be used"), std::string::npos) << chat.err;
    const Outcome batch =
        run("printf '%s\\n' '{\"prompt\": \"Hi\", \"max_tokens\": 1}' "
            "'{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 1}' | " +
            qinfer_binary() + " batch -m " + model);
    EXPECT_EQ(batch.exit_code, 0) << batch.err;
    EXPECT_NE(batch.out.find("\"finish_reason\""), std::string::npos) << batch.out;
    EXPECT_NE(batch.out.find("line 2: the model's chat template cannot be used"), std::string::npos) << batch.out;
  }
  const std::string jinja = dir.file("jinja");
  link_tiny(jinja, {"tokenizer_config.json"});
  config.erase("chat_template");
  std::ofstream(jinja + "/tokenizer_config.json") << config.dump();
  std::ofstream(jinja + "/chat_template.jinja") << "{% for m in messages %}[{{ m.content }}]{% endfor %}";
  ASSERT_EQ(run(qinfer_binary() + " quantize -m " + jinja + " --to q8 -o " + dir.file("q8")).exit_code, 0);
  const Outcome rendered = run("echo '{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}' | " +
                               qinfer_binary() + " template -m " + dir.file("q8"));
  EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
  EXPECT_EQ(rendered.out, "[Hi]") << rendered.err;
}

// A hunt finding: a tokenizer_config.json that is empty or not JSON made chat
// say "has no chat_template", where template said what is wrong with the file.
TEST(UsageCli, ATokenizerConfigThatIsNotAJsonObjectIsNamedSoWhenChatting) {
  ScratchDir dir("tc-not-json");
  for (const std::string& text : {std::string(), std::string("{\"chat_template\": "), std::string("[]")}) {
    const std::string model = dir.file("m" + std::to_string(text.size()));
    link_tiny(model, {"tokenizer_config.json"});
    std::ofstream(model + "/tokenizer_config.json") << text;
    EXPECT_EQ(run(qinfer_binary() + " generate -m " + model + kPrompt + " -n 1 --temp 0").exit_code, 0) << text;
    const Outcome chat = run("echo Hi | " + qinfer_binary() + " chat -m " + model + " -n 2");
    EXPECT_EQ(chat.exit_code, 1) << text << ": " << chat.err;
    EXPECT_NE(chat.err.find("the model's chat template cannot be used: " + model + "/tokenizer_config.json"),
              std::string::npos)
        << text << ": " << chat.err;
    EXPECT_EQ(chat.err.find("has no chat_template"), std::string::npos) << text << ": " << chat.err;
  }
}

// Hunt findings: refs/main was joined to snapshots/ as given, so an absolute
// path or ../ in it loaded a model from anywhere without a word; a dangling
// symlink given to -m got the hub cache's "not found" message.
TEST(UsageCli, HubRefsArePlainSnapshotNamesAndDanglingLinksAreNamed) {
  ScratchDir dir("hub-refs");
  const std::string repo = dir.file("models--Org--Tiny");
  fs::create_directories(repo + "/refs");
  link_tiny(repo + "/snapshots/fedcba9");
  link_tiny(dir.file("elsewhere"));
  for (const std::string& ref : {dir.file("elsewhere"), std::string("../../elsewhere")}) {
    std::ofstream(repo + "/refs/main", std::ios::trunc) << ref;
    const Outcome r = run("HF_HUB_CACHE=" + dir.path() + " " + qinfer_binary() + " generate -m Org/Tiny" + kPrompt +
                          " -n 1 --temp 0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("names snapshot '" + ref + "', which is not a snapshot's name; taking the newest other"),
              std::string::npos)
        << r.err;
  }
  // A review finding: a snapshot whose config.json links to a deleted blob stopped the lookup; it is skipped.
  std::filesystem::remove(repo + "/refs/main");
  fs::create_directories(repo + "/snapshots/0broken");
  fs::create_symlink("../../blobs/deleted", repo + "/snapshots/0broken/config.json");
  fs::last_write_time(repo + "/snapshots/0broken", fs::file_time_type::clock::now() + std::chrono::hours(1));
  const Outcome skipped =
      run("HF_HUB_CACHE=" + dir.path() + " " + qinfer_binary() + " generate -m Org/Tiny" + kPrompt + " -n 1 --temp 0");
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  fs::create_directories(dir.file("m"));
  fs::create_symlink(dir.file("m/nowhere"), dir.file("m/dangling"));
  const Outcome dangling = run("cd " + dir.path() + " && " + qinfer_binary() + " generate -m m/dangling" + kPrompt);
  EXPECT_EQ(dangling.exit_code, 1);
  EXPECT_NE(
      dangling.err.find("m/dangling: is a symbolic link to " + dir.file("m/nowhere") + ", which is not a directory"),
      std::string::npos)
      << dangling.err;
}

// Hunt findings: a config.json that was a directory was "not found", and a
// generation_config.json that was a FIFO or a device counted as absent
// (other sampling defaults, silently).
TEST(UsageCli, CheckpointFilesThatAreNotFilesAreNamedSo) {
  ScratchDir dir("not-files");
  link_tiny(dir.file("dir"), {"config.json"});
  fs::create_directories(dir.file("dir/config.json"));
  link_tiny(dir.file("fifo"), {"generation_config.json"});
  ASSERT_EQ(::mkfifo(dir.file("fifo/generation_config.json").c_str(), 0644), 0);
  link_tiny(dir.file("dev"), {"generation_config.json"});
  fs::create_symlink("/dev/zero", dir.file("dev/generation_config.json"));
  // Hunt findings: a snapshot's link to a missing blob was "absent" (greedy
  // decoding and config.json's eos without a word, for generation_config.json)
  // or "not found"; a LoRA adapter's weights that were a FIFO blocked the load.
  for (const char* file : {"generation_config.json", "tokenizer.json", "model.safetensors"}) {
    link_tiny(dir.file(std::string("dangling-") + file), {file});
    fs::create_symlink("../../blobs/0123abcd", dir.file(std::string("dangling-") + file + "/" + file));
  }
  fs::create_directories(dir.file("fifo-lora"));
  std::ofstream(dir.file("fifo-lora/adapter_config.json"))
      << R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]})";
  ASSERT_EQ(::mkfifo(dir.file("fifo-lora/adapter_model.safetensors").c_str(), 0644), 0);
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"-m " + dir.file("dir"), "config.json: is a directory, not a file"},
           {"-m " + dir.file("fifo"), "generation_config.json: is a FIFO, not a file"},
           {"-m " + dir.file("dev"), "generation_config.json: is a device or socket, not a file"},
           {"-m " + dir.file("dangling-generation_config.json"),
            "generation_config.json: is a broken symbolic link (to ../../blobs/0123abcd: No such file or directory)"},
           {"-m " + dir.file("dangling-tokenizer.json"), "tokenizer.json: is a broken symbolic link (to ../../blobs/"},
           {"-m " + dir.file("dangling-model.safetensors"),
            "model.safetensors: is a broken symbolic link (to ../../blobs/"},
           {"-m " + tiny() + " --lora " + dir.file("fifo-lora"), "adapter_model.safetensors: is a FIFO, not a file"}}) {
    const Outcome r = run("timeout 20 " + qinfer_binary() + " generate " + args + kPrompt + " -n 1");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
}
