// `qinfer generate` end to end through the built binary.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "golden.h"
#include "json_lines.h"
#include "test_util.h"
#include "util/mapped_file.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;

namespace {

json golden(const std::string& name) {
  std::ifstream in(data_path("golden/" + name + ".json"));
  return json::parse(in);
}

}  // namespace

TEST(GenerateCli, GreedyJsonMatchesGoldenAndWritesLogits) {
  qinfer::test::ScratchDir dir("cli");
  const qinfer::test::Golden g = qinfer::test::load_golden("tiny");
  const json& p = g.meta["prompts"][0];
  std::string ids;
  for (const auto& id : p["ids"]) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id.get<int>());
  }
  const auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids " + ids +
                             " -n 32 --temp 0 --ignore-eos --json -t 2 --logits-out " + dir.file("l.f32"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json out = json::parse(r.output);
  EXPECT_EQ(out["prompt_ids"], p["ids"]);
  const auto got = out["ids"].get<std::vector<int>>();
  const auto want = p["greedy"].get<std::vector<int>>();
  ASSERT_EQ(got.size(), 32u);
  for (int i = 0; i < p["tokens_before_margin_below"]["0.001"].get<int>(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  EXPECT_GT(out["decode_tok_s"].get<double>(), 0);
  EXPECT_GT(out["prefill_tok_s"].get<double>(), 0);

  std::vector<float> logits(g.vocab());
  std::ifstream(dir.file("l.f32"), std::ios::binary)
      .read(reinterpret_cast<char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  EXPECT_LE(qinfer::test::max_abs_diff(logits, g.logits_of(0)), 1e-4f);
}

TEST(GenerateCli, StopsAtEosUnlessIgnored) {
  // Greedy tiny2 on prompt 1 of the golden file: find a prompt whose greedy path we know, then
  // make its first token an eos through a patched generation_config and check generation stops there.
  qinfer::test::ScratchDir dir("eos");
  namespace fs = std::filesystem;
  for (const auto& e : fs::directory_iterator(data_path("models/tiny")))
    if (e.path().filename() != "generation_config.json")
      fs::copy(e.path(), dir.path() + "/" + e.path().filename().string());
  const json g = golden("tiny");
  const int first = g["prompts"][0]["greedy"][0].get<int>();
  std::ofstream(dir.file("generation_config.json")) << json{{"eos_token_id", {151645, first}}}.dump();
  const std::string base =
      qinfer_binary() + " generate -m " + dir.path() + " --prompt-ids 785,6722,315,9625,374 -n 5 --temp 0 --json";
  auto r = run_command(base);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);
  EXPECT_EQ(out["ids"], json::array({first}));
  EXPECT_EQ(out["finish_reason"], "stop");
  r = run_command(base + " --ignore-eos");
  out = json::parse(r.output);
  EXPECT_EQ(out["ids"].size(), 5u);
  EXPECT_EQ(out["finish_reason"], "length");
}

TEST(GenerateCli, ClearErrors) {
  auto r = run_command(qinfer_binary() + " generate -m /nonexistent/model --prompt-ids 1 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("neither a directory nor a Hugging Face hub id"), std::string::npos) << r.output;

  r = run_command("HF_HOME=/nonexistent HF_HUB_CACHE=/nonexistent/hub " + qinfer_binary() +
                  " generate -m Qwen/Qwen3-0.6B --prompt-ids 1 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("huggingface-cli download Qwen/Qwen3-0.6B"), std::string::npos) << r.output;

  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 1,x,3 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("'x' is not a token id"), std::string::npos) << r.output;

  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 1 -n 50000 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("exceeds the context length of 40960 tokens; use -n 40959 or less"), std::string::npos)
      << r.output;

  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 999999 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("outside the vocabulary"), std::string::npos) << r.output;

  // A hunt finding: an empty --logits-out was ignored, so no logits were written and none were asked about.
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                  " --prompt-ids 1 -n 1 --logits-out '' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--logits-out is empty"), std::string::npos) << r.output;
}

TEST(GenerateCli, HelpSaysWhatItDoes) {
  auto r = run_command(qinfer_binary() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("generate"), std::string::npos);
  r = run_command(qinfer_binary() + " generate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--prompt-ids"), std::string::npos);
  EXPECT_NE(r.output.find("--logits-out"), std::string::npos);
}

TEST(BenchCli, JsonReportsSpeedAndRoofline) {
  const auto r =
      run_command(qinfer_binary() + " bench -m " + data_path("models/tiny") + " -p 16 -n 4 --reps 3 -t 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  for (const char* key : {"pp_tok_s", "tg_tok_s", "roofline_pct", "probe_gb_s", "pp_gflop_s", "fma_peak_gflop_s",
                          "pp_peak_pct", "load_s", "peak_rss_mib"})
    EXPECT_GT(j.at(key).get<double>(), 0) << key;
  EXPECT_LT(j["pp_peak_pct"].get<double>(), 100);  // no prefill outruns the FMA units
  for (const char* key : {"probe_gb_s_before_after", "fma_peak_gflop_s_before_after"}) {
    ASSERT_EQ(j.at(key).size(), 2u) << key;
    EXPECT_GT(j[key][0].get<double>(), 0) << key;
    EXPECT_GT(j[key][1].get<double>(), 0) << key;
  }
  EXPECT_LE(j["tg_tok_s_min"].get<double>(), j["tg_tok_s"].get<double>());
  EXPECT_GE(j["tg_tok_s_max"].get<double>(), j["tg_tok_s"].get<double>());
  EXPECT_EQ(j["lora"], json::array());

  // With a LoRA adapter: named, and its bytes counted in what decode reads.
  qinfer::test::ScratchDir dir("bench-lora");
  auto made = run_command(qinfer_binary() + " make-test-model --preset tiny --lora 4 --out " + dir.path() + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const auto adapted = run_command(qinfer_binary() + " bench -m " + data_path("models/tiny") +
                                   " -p 8 -n 4 --reps 2 -t 2 --json" + " --lora " + dir.path());
  ASSERT_EQ(adapted.exit_code, 0) << adapted.output;
  const json a = json::parse(adapted.output);
  // The median of an even number of repetitions is the mean of the middle two (it was the larger).
  for (const std::string rate : {"pp_tok_s", "tg_tok_s"})
    EXPECT_DOUBLE_EQ(a[rate].get<double>(), (a[rate + "_min"].get<double>() + a[rate + "_max"].get<double>()) / 2)
        << rate;
  EXPECT_EQ(a["lora"], json::array({dir.path()}));
  EXPECT_GT(a["decode_gb_per_token"].get<double>(), j["decode_gb_per_token"].get<double>());
}

TEST(BenchBatchCli, JsonReportsEachLevelWithItsKvPoolAndPeakRss) {
  const auto r = run_command(qinfer_binary() + " bench-batch -m " + data_path("models/tiny") +
                             " --parallel 1,3 -p 5 -n 4 -t 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  ASSERT_EQ(j.at("levels").size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& level = j["levels"][i];
    EXPECT_EQ(level.at("parallel").get<int>(), i == 0 ? 1 : 3);
    for (const char* key : {"prefill_tok_s", "decode_tok_s", "decode_tok_s_per_seq", "kv_pool_mib", "peak_rss_mib"})
      EXPECT_GT(level.at(key).get<double>(), 0) << key << " at level " << i;
    EXPECT_NEAR(level["decode_tok_s_per_seq"].get<double>() * level["parallel"].get<double>(),
                level["decode_tok_s"].get<double>(), 1e-6 * level["decode_tok_s"].get<double>());
  }
  // Three sequences need about three times the blocks of one.
  EXPECT_GT(j["levels"][1]["kv_blocks"].get<int>(), 2 * j["levels"][0]["kv_blocks"].get<int>());
  EXPECT_GT(j["levels"][1]["kv_pool_mib"].get<double>(), 2 * j["levels"][0]["kv_pool_mib"].get<double>());
  // A hunt finding: one-token prompts' step has as many tokens as rows, and was counted as decode (prefill 0).
  const auto one = run_command(qinfer_binary() + " bench-batch -m " + data_path("models/tiny") +
                               " --parallel 2 -p 1 -n 3 -t 1 --json");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_GT(json::parse(one.output)["levels"][0]["prefill_tok_s"].get<double>(), 0) << one.output;
}

TEST(MakeTestModelCli, WritesALoadableCheckpoint) {
  qinfer::test::ScratchDir dir("mtm");
  auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --dtype f16 --seed 7 --out " + dir.path() +
                       " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(qinfer_binary() + " generate -m " + dir.path() + " --prompt-ids 1,2,3 -n 3 --temp 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["ids"].size(), 3u);
  r = run_command(qinfer_binary() + " make-test-model --preset huge --out " + dir.path() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown preset 'huge'"), std::string::npos) << r.output;
}

// A LoRA adapter end to end: make-test-model writes one, generate and batch
// (the engine) run it alike, and it changes what the model generates; bench
// names it (its bytes: BenchCli.JsonReportsSpeedAndRoofline).
TEST(MakeTestModelCli, LoraAdapterChangesGenerationAsInABatch) {
  qinfer::test::ScratchDir dir("mtm-lora");
  const std::string model = dir.file("model"), adapter = dir.file("adapter");
  auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --seed 7 --out " + model + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --lora 8 --out " + adapter + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(adapter + "/adapter_config.json"));
  const std::string gen =
      qinfer_binary() + " generate -m " + model + " --prompt-ids 1,2,3 -n 8 --temp 0 --ignore-eos --json";
  r = run_command(gen);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plain = json::parse(r.output)["ids"];
  r = run_command(gen + " --lora " + adapter);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json adapted = json::parse(r.output)["ids"];
  EXPECT_NE(adapted, plain);
  r = run_command(R"(echo '{"prompt_ids": [1, 2, 3], "max_tokens": 8, "temperature": 0, "ignore_eos": true}' | )" +
                  qinfer_binary() + " batch -m " + model + " --lora " + adapter);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["ids"], adapted);
  // Named (--lora-modules): the lines that name it take it, in the same batch as those that do not.
  const std::string line = R"({"prompt_ids": [1, 2, 3], "max_tokens": 8, "temperature": 0, "ignore_eos": true)";
  r = run_command("printf '%s\n' '" + line + R"(, "model": "sql"}' ')" + line + "}' '" + line + R"(, "model": ")" +
                  model + "\"}' '" + line + R"(, "model": "sq"}' | )" + qinfer_binary() + " batch -m " + model +
                  " --lora-modules sql=" + adapter);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<json> lines = qinfer::test::json_lines_of(r.output);
  ASSERT_EQ(lines.size(), 4u) << r.output;
  EXPECT_EQ(lines[0]["ids"], adapted);
  EXPECT_EQ(lines[1]["ids"], plain);
  EXPECT_EQ(lines[2]["ids"], plain) << "the model's own name: no adapter";
  EXPECT_NE(lines[3]["error"].get<std::string>().find("line 4: The model 'sq' does not exist"), std::string::npos)
      << lines[3];

  r = run_command(qinfer_binary() + " bench -m " + model + " -p 4 -n 2 --reps 1 -t 2 --lora " + adapter + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights bf16, LoRA adapters " + adapter + ", KV cache"), std::string::npos) << r.output;

  r = run_command(gen + " --lora " + dir.file("none") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no adapter_model.safetensors"), std::string::npos) << r.output;
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --lora 0 --out " + dir.file("zero") + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--lora must be a rank"), std::string::npos) << r.output;
}

// A mixture of experts end to end: made with fewer layers, its greedy ids
// from `generate` are those `batch` gives the same prompt among others, and
// bench-batch (as bench) names the experts' format.
TEST(MakeTestModelCli, AMixtureOfExpertsGeneratesAloneAsInABatch) {
  qinfer::test::ScratchDir dir("mtm-moe");
  auto r =
      run_command(qinfer_binary() + " make-test-model --preset tiny-moe --layers 3 --out " + dir.file("m") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json config = json::parse(std::ifstream(dir.file("m/config.json")));
  EXPECT_EQ(config["architectures"][0], "Qwen3MoeForCausalLM");
  EXPECT_EQ(config["num_hidden_layers"], 3);
  EXPECT_EQ(config["num_experts"], 8);
  r = run_command(qinfer_binary() + " generate -m " + dir.file("m") +
                  " --weights q8 --prompt-ids 9707,11,1879 -n 12 --temp 0 "
                  "--ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto alone = json::parse(r.output)["ids"];
  ASSERT_EQ(alone.size(), 12u);
  {
    std::ofstream in(dir.file("in.jsonl"));
    for (const char* ids : {"[1,2,3,4,5,6,7]", "[9707,11,1879]", "[42]", "[100,200,300,400]"})
      in << R"({"prompt_ids": )" << ids << R"(, "max_tokens": 12, "temperature": 0, "ignore_eos": true})"
         << "\n";
  }
  r = run_command(qinfer_binary() + " batch -m " + dir.file("m") + " --weights q8 --parallel 4 < " +
                  dir.file("in.jsonl") + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string line;
  std::vector<json> results;
  while (std::getline(lines, line)) results.push_back(json::parse(line));
  ASSERT_EQ(results.size(), 4u) << r.output;
  EXPECT_EQ(results[1]["ids"], alone);
  r = run_command(qinfer_binary() + " bench-batch -m " + dir.file("m") +
                  " --weights q8 --parallel 1 -p 8 -n 2 --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["weights"], "q8") << r.output;
}

TEST(MakeTestModelCli, ScriptedCheckpointRepliesWithTheScriptThenStops) {
  qinfer::test::ScratchDir dir("mtm-script");
  const std::string script = "<think>Two plus two makes four.</think>\n\nThe answer is 4";
  std::ofstream(dir.file("script.txt")) << script;
  auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("m") +
                       " --script \"$(cat " + dir.file("script.txt") + ")\" 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("scripted"), std::string::npos) << r.output;
  // A chat prompt ends in "assistant\n"; sampling with the checkpoint's defaults follows the script too.
  std::ofstream(dir.file("prompt.txt")) << "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
  for (const std::string sampling : {"--temp 0", "--seed 3"}) {
    r = run_command(qinfer_binary() + " generate -m " + dir.file("m") + " --prompt-file " + dir.file("prompt.txt") +
                    " -n 40 --json " + sampling);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json j = json::parse(r.output);
    EXPECT_EQ(j["text"], script) << sampling;
    EXPECT_EQ(j["finish_reason"], "stop") << sampling;  // the script ends in <|im_end|>
  }
  // "\n" then "\nabc": "\n" would be followed by "\n" and by "abc".
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("bad") +
                  " --script \"$(printf '\\nabc')\" 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("token id 198 is followed by 198"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad")));
  // Hunt findings: --script "" wrote random weights; an end of sequence inside the script was taken.
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("empty") + " --script '' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("scripted"), std::string::npos) << r.output;
  r = run_command(qinfer_binary() + " generate -m " + dir.file("empty") + " --prompt-file " + dir.file("prompt.txt") +
                  " -n 5 --temp 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["text"], "");
  EXPECT_EQ(json::parse(r.output)["finish_reason"], "stop");
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("eos") +
                  " --script 'a<|im_end|>b' 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--script: the text holds an end of sequence (id 151645) before its end"), std::string::npos)
      << r.output;
  // A hunt finding: invalid UTF-8 was "tokenizer: the text to encode is not valid UTF-8", naming no flag.
  r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("utf8") +
                  " --script \"$(printf 'ok\\377')\" 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--script is not valid UTF-8 (byte offset 2)"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("utf8")));
}

TEST(GenerateCli, TextPromptJsonHasTextWithoutPromptAndHonoursStop) {
  const std::string base = qinfer_binary() + " generate -m " + data_path("models/tiny") + " --temp 0 -n 10 --json";
  auto r = run_command(base + " -p 'The capital of France is'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json full = json::parse(r.output);
  EXPECT_EQ(full["prompt_ids"], json::array({785, 6722, 315, 9625, 374}));
  const std::string text = full["text"];
  ASSERT_GT(text.size(), 6u);
  EXPECT_EQ(text.find("The capital"), std::string::npos);  // generated text only
  // Stop at a string taken from the middle of the generated text: whole characters, as stop strings are.
  auto character_start = [&](size_t i) {
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    return i;
  };
  const size_t stop_from = character_start(3);
  const std::string stop = text.substr(stop_from, character_start(stop_from + 3) - stop_from);
  ASSERT_FALSE(stop.empty()) << text;
  r = run_command(base + " -p 'The capital of France is' --stop '" + stop + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json stopped = json::parse(r.output);
  EXPECT_EQ(stopped["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(stopped["finish_reason"], "stop");
  // A hunt finding: a stop string of invalid UTF-8 (half a character) was taken, and never found.
  r = run_command(base + " -p x --stop \"$(printf 'a\\360\\237')\" 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--stop: the stop string is not valid UTF-8 (byte offset 1)"), std::string::npos) << r.output;

  qinfer::test::ScratchDir dir("pf");
  std::ofstream(dir.file("p.txt")) << "The capital of France is";
  r = run_command(base + " --prompt-file " + dir.file("p.txt"));
  EXPECT_EQ(json::parse(r.output)["ids"], full["ids"]);
  r = run_command(base + " -p x --prompt-ids 1 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("exactly one of"), std::string::npos) << r.output;
}

TEST(GenerateCli, LogprobsOfEachToken) {
  const auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                             " --prompt-ids 785,6722,315,9625,374 -n 4 --temp 0 --ignore-eos --json --logprobs 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  ASSERT_EQ(j["logprobs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const json& t = j["logprobs"][i];
    EXPECT_EQ(t["id"], j["ids"][i]);
    EXPECT_TRUE(t["token"].is_string());
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_EQ(t["top_logprobs"][0]["id"], t["id"]) << "greedy";
    EXPECT_GE(t["top_logprobs"][1]["logprob"].get<double>(), t["top_logprobs"][2]["logprob"].get<double>());
  }
  auto bad =
      run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " --prompt-ids 1 --logprobs 3 2>&1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--json"), std::string::npos) << bad.output;
  bad = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                    " --prompt-ids 1 --json --logprobs -2 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

namespace {

// A copy of tiny whose tied embedding (and so lm_head) has NaN in rows
// [first, first + n): those tokens' logits are NaN at every step.
void write_nan_model(const std::string& dir, int64_t first, int64_t n) {
  namespace fs = std::filesystem;
  for (const auto& e : fs::directory_iterator(data_path("models/tiny")))
    if (e.path().filename() != "model.safetensors")
      fs::create_symlink(e.path(), dir + "/" + e.path().filename().string());
  std::ifstream in(data_path("models/tiny/model.safetensors"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | static_cast<uint8_t>(bytes[i]);
  const json header = json::parse(bytes.substr(8, header_len));
  const json& t = header.at("model.embed_tokens.weight");
  ASSERT_EQ(t["dtype"], "BF16");
  const int64_t cols = t["shape"][1].get<int64_t>();
  const size_t base = 8 + header_len + t["data_offsets"][0].get<size_t>();
  for (int64_t i = first * cols; i < (first + n) * cols; ++i) {
    bytes[base + 2 * i] = static_cast<char>(0xC0);  // bf16 quiet NaN 0x7FC0, little-endian
    bytes[base + 2 * i + 1] = 0x7F;
  }
  std::ofstream(dir + "/model.safetensors", std::ios::binary) << bytes;
}

}  // namespace

TEST(GenerateCli, NaNLogitsStopWithAnErrorNamingTheStep) {
  struct Case {
    int64_t first, rows, nan_logits;
  };
  // Rows the prompt does not use give exactly their own logits NaN; rows
  // [0, 1000) hold prompt tokens 785, 315 and 374, whose NaN embeddings make
  // every hidden state NaN, so every logit is (not a sampler fault).
  for (const Case c : {Case{150000, 1, 1}, Case{150000, 1000, 1000}, Case{0, 1000, 151936}}) {
    qinfer::test::ScratchDir dir("nan");
    write_nan_model(dir.path(), c.first, c.rows);
    for (const char* temp : {"0", "0.7"}) {
      const auto r = run_command(qinfer_binary() + " generate -m " + dir.path() +
                                 " --prompt-ids 785,6722,315,9625,374 -n 4 --temp " + temp + " --json 2>&1");
      EXPECT_EQ(r.exit_code, 1) << r.output;
      EXPECT_NE(r.output.find("qinfer: error: the model's logits for generated token 1 (position 5) have " +
                              std::to_string(c.nan_logits) + " NaN values of 151936: the weights are corrupt"),
                std::string::npos)
          << r.output;
    }
  }
}

// A hunt finding: batch stopped at the first request whose logits were NaN,
// losing the results after it, though a mixture's corrupt expert fails only
// the requests routed to it. Each such line says why, every line is written,
// and the exit status is 1.
TEST(BatchCli, CorruptWeightsFailTheirLinesAndTheOthersAreWritten) {
  qinfer::test::ScratchDir dir("nan-batch");
  write_nan_model(dir.path(), 150000, 1);  // tied: id 150000's logit is NaN for every request
  std::ofstream lines(dir.file("in.jsonl"));
  for (int i = 0; i < 3; ++i) lines << json{{"prompt_ids", {785 + i}}, {"max_tokens", 2}}.dump() << "\n";
  lines << "not json\n";
  lines.close();
  const auto r = run_command(qinfer_binary() + " batch -m " + dir.path() + " < " + dir.file("in.jsonl") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::vector<json> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') out.push_back(json::parse(line));
  ASSERT_EQ(out.size(), 4u) << r.output;
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(out[static_cast<size_t>(i)]["error"].get<std::string>().find("line " + std::to_string(i + 1) +
                                                                           ": the model's logits"),
              std::string::npos)
        << out[static_cast<size_t>(i)];
  EXPECT_NE(out[3]["error"].get<std::string>().find("line 4"), std::string::npos);
  EXPECT_NE(r.output.find("qinfer: error: 3 of the requests failed running (their lines say why)"), std::string::npos)
      << r.output;
}

TEST(GenerateCli, QuantizingNaNWeightsIsRefused) {
  qinfer::test::ScratchDir dir("nanq");
  write_nan_model(dir.path(), 150000, 3);
  for (const std::string& cmd :
       {std::string(" generate --prompt-ids 785,6722 -n 2 --weights q8 -m "),
        std::string(" generate -p hi --weights q4 -m "), " quantize --to q8 -o " + dir.file("q") + " -m "}) {
    const auto r = run_command(qinfer_binary() + cmd + dir.path() + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(
        r.output.find("tensor model.embed_tokens.weight row 150000 holds NaN or infinity: the checkpoint is corrupt"),
        std::string::npos)
        << cmd << ": " << r.output;
  }
}

// --json-schema / --json-object constrain the output as the server's
// response_format; a schema qinfer cannot follow is a command-line error.
TEST(GenerateCli, JsonSchemaConstrainsTheOutput) {
  qinfer::test::ScratchDir dir("generate-schema");
  const std::string schema_file = dir.file("schema.json");
  std::ofstream(schema_file) << R"({"type": "object", "properties": {"color": {"enum": ["red", "green"]},
                                   "dark": {"type": "boolean"}}, "required": ["color", "dark"]})";
  for (int seed = 1; seed <= 3; ++seed) {
    const auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                               " -p 'A color as JSON:' --temp 1 -n 60 --json --seed " + std::to_string(seed) +
                               " --json-schema @" + schema_file + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json out = json::parse(r.output);
    ASSERT_EQ(out["finish_reason"], "stop") << r.output;
    const json doc = json::parse(out["text"].get<std::string>());
    EXPECT_TRUE(doc["color"] == "red" || doc["color"] == "green") << doc.dump();
    EXPECT_TRUE(doc["dark"].is_boolean()) << doc.dump();
  }
  auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                       " -p x -n 20 --json --temp 0 --json-object 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["text"].get<std::string>().find_first_not_of(" \n\t"),
            json::parse(r.output)["text"].get<std::string>().find('{'));
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                  " -p x --json-schema '{\"multipleOf\": 2}' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--json-schema: json_schema: /multipleOf is a keyword qinfer does not follow"),
            std::string::npos)
      << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p x --json-schema '{nope' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("not valid JSON"), std::string::npos) << r.output;
  // A hunt finding: a file that cannot be read exited 2 here, 1 for --prompt-file; it is a failure
  // while running (exit 1), naming the flag and the file.
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p x --json-schema @" +
                  dir.file("none") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--json-schema: " + dir.file("none") + ": cannot open: No such file or directory"),
            std::string::npos)
      << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p x --json-schema @ 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--json-schema @ names no file"), std::string::npos) << r.output;
}

// --grammar (GBNF, text or @FILE) and --regex constrain the output as the
// server's structured_outputs grammar and regex: sampled outputs are whole
// matches (checked with std::regex); what they cannot read is exit 2.
TEST(GenerateCli, GrammarAndRegexConstrainTheOutput) {
  qinfer::test::ScratchDir dir("generate-grammar");
  const std::string grammar_file = dir.file("color.gbnf");
  std::ofstream(grammar_file) << "# a color and a shade\nroot ::= color \" \" shade\ncolor ::= \"red\" | \"green\"\n"
                                 "shade ::= [0-9]{1,2}\n";
  const std::regex color("(red|green) [0-9]{1,2}"), hex("#[0-9a-f]{6}");
  for (int seed = 1; seed <= 3; ++seed) {
    const std::string sampled = " -p 'A color:' --temp 1 -n 30 --json --seed " + std::to_string(seed);
    auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + sampled + " --grammar @" +
                         grammar_file + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    json out = json::parse(r.output);
    EXPECT_EQ(out["finish_reason"], "stop") << r.output;
    EXPECT_TRUE(std::regex_match(out["text"].get<std::string>(), color)) << r.output;
    r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + sampled +
                    " --regex '#[0-9a-f]{6}' 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    out = json::parse(r.output);
    EXPECT_EQ(out["finish_reason"], "stop") << r.output;
    EXPECT_TRUE(std::regex_match(out["text"].get<std::string>(), hex)) << r.output;
  }
  auto r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                       " -p x --grammar 'root ::= item' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--grammar: grammar: the rule 'item' is used but never defined (line 1, column 10)"),
            std::string::npos)
      << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p x --regex '(?=a)' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--regex: pattern '(?=a)': lookaround"), std::string::npos) << r.output;
  r = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") +
                  " -p x --regex a --grammar 'root ::= \"a\"' 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
}

// --draft (speculative decoding by prompt lookup) through generate and batch:
// a scripted model asked to repeat a text it was shown confirms the drafts
// copied from it, and the output is that of a run without --draft.
TEST(GenerateCli, DraftsFromThePromptGiveTheSameTextAndAreReported) {
  qinfer::test::ScratchDir dir("cli-draft");
  const std::string script = "one two three four five six seven eight nine ten eleven twelve";
  auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("m") + " --script '" +
                       script + "' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ofstream(dir.file("prompt.txt")) << "Repeat: " << script << "\n";
  const std::string base = qinfer_binary() + " generate -m " + dir.file("m") + " --prompt-file " +
                           dir.file("prompt.txt") + " -n 30 --temp 0";
  r = run_command(base + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plain = json::parse(r.output);
  EXPECT_EQ(plain["text"], script);
  EXPECT_FALSE(plain.contains("draft_tokens"));
  r = run_command(base + " --json --draft 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json drafted = json::parse(r.output);
  EXPECT_EQ(drafted["ids"], plain["ids"]);
  EXPECT_EQ(drafted["finish_reason"], plain["finish_reason"]);
  EXPECT_GT(drafted["draft_tokens_accepted"].get<int>(), 5) << r.output;
  EXPECT_GE(drafted["draft_tokens"].get<int>(), drafted["draft_tokens_accepted"].get<int>());
  r = run_command(base + " --draft 4 2>&1 >/dev/null");
  EXPECT_NE(r.output.find("; drafts: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" tokens accepted]"), std::string::npos) << r.output;

  std::ofstream(dir.file("lines.jsonl")) << json{{"prompt", "Repeat: " + script + "\n"}, {"temperature", 0}}.dump()
                                         << "\n";
  r = run_command(qinfer_binary() + " batch -m " + dir.file("m") + " --draft 3 < " + dir.file("lines.jsonl") + " 2>" +
                  dir.file("err.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["text"], script);
  std::stringstream err;
  err << std::ifstream(dir.file("err.txt")).rdbuf();
  EXPECT_NE(err.str().find("; drafts: "), std::string::npos) << err.str();

  for (const char* bad : {"--draft -1", "--draft 2000", "--draft 4 --draft-min-ngram 0",
                          "--draft 4 --draft-min-ngram 3 --draft-max-ngram 2", "--draft-p-min 1.5", "--draft-p-min nan",
                          "--draft-p-min 0.5", "--draft-model . --draft 0", "--draft-model . --draft-max-ngram 3"}) {
    r = run_command(base + " " + bad + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--draft"), std::string::npos) << bad << ": " << r.output;
  }
  // Hunt findings: an empty --draft-model ran without drafts; an n-gram length with a draft model was checked as
  // prompt lookup's ("--draft 0 ...") before being named as not applying.
  for (const auto& [bad, message] :
       {std::pair{"--draft-model ''", "--draft-model is empty"},
        std::pair{"--draft-model . --draft-min-ngram 5", "--draft-min-ngram applies to prompt lookup, which"}}) {
    r = run_command(base + " " + bad + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << bad << ": " << r.output;
  }
}

// --draft-model through generate and batch: a draft model that agrees with
// the model (the same script) has its drafts confirmed, the output is that
// of a run without it; one of another tokenizer is refused by name.
TEST(GenerateCli, ADraftModelGivesTheSameTextAndIsReported) {
  qinfer::test::ScratchDir dir("cli-draft-model");
  const std::string script = "one two three four five six seven eight nine ten eleven twelve";
  for (const char* name : {"m", "d"}) {
    auto r = run_command(qinfer_binary() + " make-test-model --preset tiny --out " + dir.file(name) + " --script '" +
                         script + "' 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string base = qinfer_binary() + " generate -m " + dir.file("m") + " -p 'Say it\n' -n 30 --temp 0";
  auto r = run_command(base + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plain = json::parse(r.output);
  EXPECT_EQ(plain["text"], script);
  r = run_command(base + " --json --draft-model " + dir.file("d"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json drafted = json::parse(r.output);
  EXPECT_EQ(drafted["ids"], plain["ids"]);
  EXPECT_EQ(drafted["finish_reason"], plain["finish_reason"]);
  EXPECT_GT(drafted["draft_tokens_accepted"].get<int>(), 8) << r.output;
  EXPECT_LE(drafted["draft_tokens"].get<int>(), drafted["draft_tokens_accepted"].get<int>() + 4) << "past eos only";

  std::ofstream(dir.file("lines.jsonl")) << json{{"prompt", "Say it\n"}, {"temperature", 0}}.dump() << "\n";
  r = run_command(qinfer_binary() + " batch -m " + dir.file("m") + " --draft-model " + dir.file("d") + " --draft 2 < " +
                  dir.file("lines.jsonl") + " 2>" + dir.file("err.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["text"], script);
  std::stringstream err;
  err << std::ifstream(dir.file("err.txt")).rdbuf();
  EXPECT_NE(err.str().find("; drafts: "), std::string::npos) << err.str();

  // Two ids swapped in the draft's tokenizer: its ids would mean other text.
  std::string tokenizer = qinfer::read_text_file(dir.file("d") + "/tokenizer.json");
  for (auto [from, to] :
       {std::pair{"\"0\":15", "\"0\":@"}, std::pair{"\"1\":16", "\"1\":15"}, std::pair{"\"0\":@", "\"0\":16"}}) {
    const size_t at = tokenizer.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    tokenizer.replace(at, std::string(from).size(), to);
  }
  std::ofstream(dir.file("d") + "/tokenizer.json", std::ios::trunc) << tokenizer;
  r = run_command(base + " --draft-model " + dir.file("d") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("has another tokenizer than the model's (id 15 differs)"), std::string::npos) << r.output;
  std::filesystem::remove(dir.file("d") + "/tokenizer.json");  // nothing to check it against
  r = run_command(base + " --draft-model " + dir.file("d") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("tokenizer.json not found: the draft model's tokenizer must be checked"), std::string::npos)
      << r.output;
  r = run_command(base + " --draft-model " + dir.file("none") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--draft-model " + dir.file("none") + ": "), std::string::npos)
      << "which model failed to load: " << r.output;
}

// A draft model whose logits are all NaN (corrupt weights) drafts nothing:
// the output is the model's own, no draft id run.
TEST(GenerateCli, ADraftModelOfNaNLogitsDraftsNothing) {
  qinfer::test::ScratchDir dir("cli-draft-nan");
  const int64_t vocab = 151936;
  write_nan_model(dir.path(), 0, vocab);
  const std::string base = qinfer_binary() + " generate -m " + data_path("models/tiny") +
                           " --prompt-ids 1,2,3 -n 12 --temp 0 --ignore-eos --json";
  auto r = run_command(base);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plain = json::parse(r.output);
  r = run_command(base + " --draft-model " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json drafted = json::parse(r.output);
  EXPECT_EQ(drafted["ids"], plain["ids"]);
  EXPECT_EQ(drafted["draft_tokens"], 0) << r.output;
}
