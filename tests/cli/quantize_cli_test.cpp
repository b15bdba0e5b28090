// `qinfer quantize` and the --weights/--kv options of generate and bench,
// end to end through the built binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/simd.h"
#include "test_util.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;

namespace {

// Greedy ids of `qinfer generate` on the first golden prompt of tiny.
json generate(const std::string& model, const std::string& extra) {
  const auto r =
      run_command(qinfer_binary() + " generate -m " + model + " --prompt-ids 785,6722,315,9625,374 -n 8 --temp 0 " +
                  "--ignore-eos --json -t 2 " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(r.output, nullptr, false);
}

// A copy of tiny in `copy`, and in `links` a link to each of its files (as
// a Hugging Face snapshot links its blobs).
void copy_tiny_and_link_its_files(const std::string& copy, const std::string& links) {
  namespace fs = std::filesystem;
  fs::copy(data_path("models/tiny"), copy);
  fs::create_directory(links);
  for (const auto& f : fs::directory_iterator(copy))
    fs::create_symlink(f.path(), fs::path(links) / f.path().filename());
}

}  // namespace

TEST(QuantizeCli, SavedModelGeneratesLikeQuantizingAtLoad) {
  for (const char* to : {"q8", "q4"}) {
    qinfer::test::ScratchDir dir("quantize-cli");
    const std::string out = dir.file("model");
    const auto r = run_command(qinfer_binary() + " quantize -m " + data_path("models/tiny") + " --to " + to + " -o " +
                               out + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("wrote"), std::string::npos) << r.output;
    const json saved = generate(out, ""), at_load = generate(data_path("models/tiny"), std::string("--weights ") + to);
    EXPECT_EQ(saved["ids"], at_load["ids"]) << to;
    EXPECT_EQ(saved["ids"].size(), 8u);
  }
}

// A checkpoint as Qwen publishes its -FP8, -AWQ and -GPTQ models generates as
// stored (float weights from its codes and scales) and quantizes to Q8 once,
// saved, like --weights q8 at every load.
TEST(QuantizeCli, PublishedQuantizedCheckpointsGenerateAndQuantize) {
  for (const std::string format : {"fp8", "awq", "gptq"}) {
    qinfer::test::ScratchDir dir("quantize-published");
    const std::string model = dir.file(format), q8 = dir.file("q8");
    auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --dtype " + format + " --seed 4 --out " +
                         model + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json config = json::parse(std::ifstream(model + "/config.json"));
    EXPECT_EQ(config["quantization_config"]["quant_method"], format);
    EXPECT_EQ(generate(model, "")["ids"].size(), 8u);
    r = run_command(qinfer_binary() + " quantize -m " + model + " --to q8 -o " + q8 + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(json::parse(std::ifstream(q8 + "/config.json"))["quantization_config"]["quant_method"], "qinfer");
    EXPECT_EQ(generate(q8, "")["ids"], generate(model, "--weights q8")["ids"]) << format;
    r = run_command(qinfer_binary() + " make-test-model --preset tiny --dtype " + format + " --script hi --out " +
                    dir.file("s") + " 2>&1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--script writes exact weights"), std::string::npos) << r.output;
  }
}

TEST(QuantizeCli, BadArgumentsFailWithAMessage) {
  qinfer::test::ScratchDir dir("quantize-cli");
  auto r = run_command(qinfer_binary() + " quantize -m " + data_path("models/tiny") + " --to q5 -o " + dir.file("x") +
                       " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--to must be q8 or q4"), std::string::npos) << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 1 --weights q3 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown weight format 'q3'"), std::string::npos) << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 1 --kv f8 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown KV cache type 'f8'"), std::string::npos) << r.output;
}

TEST(QuantizeCli, BenchTakesWeightsAndKvOptions) {
  const auto r = run_command(qinfer_binary() + " bench -m " + data_path("models/tiny") +
                             " -p 16 -n 4 --reps 1 -t 2 --weights q8 --kv f16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  for (const char* key : {"pp_tok_s", "tg_tok_s", "roofline_pct", "probe_gb_s", "first_token_s", "peak_rss_mib"})
    EXPECT_GT(j[key].get<double>(), 0) << key;
  EXPECT_EQ(j["weights"], "q8");
  EXPECT_EQ(j["kv"], "f16");
  EXPECT_EQ(j["simd_target"], qinfer::simd::dispatched_target());
}

// A review finding: --force left the files of the checkpoint that was there
// which the new one does not write, and they were read with it (a stale
// chat_template.jinja replaced the template; stale shards and their index).
TEST(QuantizeCli, ForceReplacesTheCheckpointThatWasThereWhole) {
  qinfer::test::ScratchDir dir("force-stale");
  const std::string out = dir.file("q");
  std::filesystem::create_directories(out);
  for (const char* stale : {"chat_template.jinja", "model-00001-of-00002.safetensors", "model.safetensors.index.json",
                            "special_tokens_map.json"})
    std::ofstream(out + "/" + stale) << "stale";
  std::ofstream(out + "/NOTES.md") << "the user's own";
  std::ofstream(out + "/package.json") << "{}";  // the user's too: no checkpoint file by its name
  const std::string quantize = qinfer_binary() + " quantize -m " + data_path("models/tiny") + " --to q8 -o " + out;
  // A run that fails leaves them all.
  auto r =
      run_command(qinfer_binary() + " quantize -m " + dir.file("missing") + " --to q8 -o " + out + " --force 2>&1");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/chat_template.jinja"));
  r = run_command(quantize + " --force 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"NOTES.md", "config.json", "generation_config.json", "model.safetensors",
                                             "package.json", "tokenizer.json", "tokenizer_config.json"}));
  r = run_command("echo '{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}' | " + qinfer_binary() +
                  " template -m " + out);
  EXPECT_EQ(r.output.find("stale"), std::string::npos) << r.output;
  // A review finding: what the command wrote within the same tick of the kernel's clock looked older than the
  // directory's opening, and was removed as the earlier checkpoint's (a LoRA adapter, written in microseconds).
  const std::string adapter = dir.file("adapter");
  std::filesystem::create_directories(adapter);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(
        run_command(qinfer_binary() + " make-test-model --preset tiny --lora 1 --force --out " + adapter).exit_code, 0);
    EXPECT_TRUE(std::filesystem::exists(adapter + "/adapter_model.safetensors")) << i;
    EXPECT_TRUE(std::filesystem::exists(adapter + "/adapter_config.json")) << i;
  }
}

TEST(QuantizeCli, ExistingOutputNeedsForceAndQuantizedInputIsRefused) {
  qinfer::test::ScratchDir dir("force");
  const std::string out = dir.file("m");
  const std::string make = qinfer_binary() + " make-test-model --preset tiny --dtype bf16 --out " + out + " 2>&1";
  ASSERT_EQ(run_command(make).exit_code, 0);
  auto r = run_command(make);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(out + ": the directory exists and is not empty; pass --force"), std::string::npos)
      << r.output;
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --dtype bf16 --force --out " + out + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A hunt finding: a link to nowhere was taken for a directory to create, and removed with the failure.
  const std::string dangling = dir.file("dangling");
  std::filesystem::create_symlink(dir.file("nowhere"), dangling);
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dangling + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(dangling + ": is a symbolic link to nothing"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::is_symlink(dangling)) << "the user's link stays";

  const std::string q = dir.file("q");
  const std::string quantize =
      qinfer_binary() + " quantize -m " + data_path("models/tiny") + " --to q8 -o " + q + " 2>&1";
  ASSERT_EQ(run_command(quantize).exit_code, 0);
  r = run_command(quantize);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("pass --force"), std::string::npos) << r.output;
  EXPECT_EQ(run_command(quantize + " --force").exit_code, 0);
  r = run_command(qinfer_binary() + " quantize -m " + q + " --to q4 -o " + dir.file("qq") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is already quantized (q8): quantize the original float checkpoint"), std::string::npos)
      << r.output;
  r = run_command(qinfer_binary() + " bench -m " + q + " -p 4 -n 2 --quality 4 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("already quantized (it would be compared with itself)"), std::string::npos) << r.output;
  // A hunt finding: --weights q4 on a q8 checkpoint quantized it again without a word (quantize refuses that).
  r = run_command(qinfer_binary() + " generate -m " + q + " --prompt-ids 1 -n 1 --weights q4 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is stored as q8; quantizing it again would add a second rounding error"), std::string::npos)
      << r.output;
  EXPECT_EQ(run_command(qinfer_binary() + " generate -m " + q + " --prompt-ids 1 -n 1 --weights q8 2>&1").exit_code, 0);
  EXPECT_EQ(run_command(qinfer_binary() + " generate -m " + q + " --prompt-ids 1 -n 1 --weights f32 2>&1").exit_code, 0)
      << "dequantizing is allowed";
}

// A hunt finding: an output directory whose files link to the source's (as a
// Hugging Face cache snapshot's do) had the source overwritten by --force.
TEST(QuantizeCli, ForceReplacesLinksInTheOutputInsteadOfWritingThroughThem) {
  namespace fs = std::filesystem;
  qinfer::test::ScratchDir dir("quantize-links");
  const std::string src = dir.file("src"), out = dir.file("out");
  copy_tiny_and_link_its_files(src, out);
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const auto r = run_command(qinfer_binary() + " quantize -m " + src + " --to q8 -o " + out + " --force 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& f : fs::directory_iterator(data_path("models/tiny"))) {
    const std::string name = f.path().filename().string();
    EXPECT_EQ(bytes(src + "/" + name), bytes(f.path())) << name << " of the source was changed";
    EXPECT_FALSE(fs::is_symlink(out + "/" + name)) << name;
  }
  EXPECT_EQ(generate(out, "")["ids"], generate(data_path("models/tiny"), "--weights q8")["ids"]);
}

// A hunt finding, the other way round: a model directory of links into the
// output directory (a view of a checkpoint, a Hugging Face snapshot and its
// blobs/) had --force replace the checkpoint it read, losing its tokenizer.
TEST(QuantizeCli, AnOutputThatHoldsTheModelsLinkedFilesIsRefused) {
  namespace fs = std::filesystem;
  qinfer::test::ScratchDir dir("quantize-view");
  const std::string orig = dir.file("orig"), view = dir.file("view");
  copy_tiny_and_link_its_files(orig, view);
  const auto r = run_command(qinfer_binary() + " quantize -m " + view + " --to q8 -o " + orig + " --force 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(orig + ": the model's files are there"), std::string::npos) << r.output;
  const auto self = run_command(qinfer_binary() + " quantize -m " + orig + " --to q8 -o " + orig + " --force 2>&1");
  EXPECT_EQ(self.exit_code, 1) << self.output;
  EXPECT_NE(self.output.find(orig + ": the output directory is the model's own directory"), std::string::npos)
      << self.output;
  for (const auto& f : fs::directory_iterator(data_path("models/tiny"))) {
    const std::string name = f.path().filename().string();
    ASSERT_TRUE(fs::exists(orig + "/" + name)) << name;
    EXPECT_EQ(fs::file_size(orig + "/" + name), fs::file_size(f.path())) << name << " was changed";
  }
  EXPECT_EQ(generate(view, "")["ids"], generate(data_path("models/tiny"), "")["ids"]);
}

// A hunt finding: a write that failed (a full disk) left a partial
// model.safetensors, which failed to load and made the rerun refuse the
// directory; its message said "write failed" without why. A file size limit
// (ulimit -f, SIGXFSZ ignored) stands in for the full disk.
TEST(QuantizeCli, AWriteThatFailsLeavesNoPartialCheckpoint) {
  qinfer::test::ScratchDir dir("full");
  const std::string limited = "bash -c \"trap '' XFSZ; ulimit -f 2048; ";
  for (const auto& [command, out] :
       {std::pair{qinfer_binary() + " make-test-model --preset tiny --dtype bf16 --out " + dir.file("m"),
                  dir.file("m")},
        std::pair{qinfer_binary() + " quantize -m " + data_path("models/tiny") + " --to q8 -o " + dir.file("q"),
                  dir.file("q")}}) {
    const auto r = run_command(limited + command + "\" 2>&1");
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("model.safetensors: write failed: File too large"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << r.output;
    EXPECT_EQ(run_command(command + " 2>&1").exit_code, 0) << "the rerun writes it whole";
  }
  // In a directory that held a checkpoint (--force), that one stays whole: the new one is written beside it and
  // moved into place only once whole (it was replaced file by file, leaving neither).
  const auto r = run_command(limited + qinfer_binary() + " make-test-model --preset tiny --dtype bf16 --force --out " +
                             dir.file("q") + "\" 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(generate(dir.file("q"), "")["ids"], generate(data_path("models/tiny"), "--weights q8")["ids"]);
  EXPECT_FALSE(std::filesystem::exists(dir.file("q") + "/qinfer-incomplete-checkpoint"));
}

// What an interrupt (Ctrl-C) leaves: the files written so far in the staging directory, with its marker, none in
// place. The next run into the directory clears it, --force or not. Review findings: a staging directory without
// the marker is not this command's (a model copied there was removed, then not found to quantize), and one whose
// marker a running command holds locked is that run's (a second run removed the first's files).
TEST(QuantizeCli, ARunAfterAnInterruptedOneClearsWhatItLeft) {
  namespace fs = std::filesystem;
  qinfer::test::ScratchDir dir("interrupted");
  const std::string out = dir.file("m"), staging = out + "/qinfer-incomplete-checkpoint";
  fs::create_directories(staging);
  std::ofstream(staging + "/.qinfer-staging");
  std::ofstream(staging + "/model.safetensors") << "half a checkpoint";
  std::ofstream(staging + "/README.md") << "copied from the model";
  const std::string make = qinfer_binary() + " make-test-model --preset tiny --dtype bf16 --out " + out + " 2>&1";
  auto r = run_command(make);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_FALSE(fs::exists(out + "/.qinfer-staging"));
  EXPECT_EQ(generate(out, "")["ids"].size(), 8u) << "the new checkpoint loads";

  // A model in the staging directory's place, quantized into the directory above it.
  fs::copy(data_path("models/tiny"), staging);
  r = run_command(qinfer_binary() + " quantize -m " + staging + " --to q8 -o " + out + " --force 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(staging + ": is not what an interrupted run of this command left"), std::string::npos)
      << r.output;
  EXPECT_EQ(generate(staging, "")["ids"], generate(data_path("models/tiny"), "")["ids"]) << "the model is whole";
  fs::remove_all(staging);

  // A run in progress: its marker locked.
  fs::create_directories(staging);
  const int held = ::open((staging + "/.qinfer-staging").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::ofstream(staging + "/model.safetensors") << "being written";
  r = run_command(make + " --force");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(staging + ": another qinfer run is writing a checkpoint there now"), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(staging + "/model.safetensors"));
  ::close(held);
}
