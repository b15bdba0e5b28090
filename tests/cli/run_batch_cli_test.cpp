// `qinfer run-batch` through the built binary: OpenAI Batch API lines in,
// OpenAI batch output lines out in input order, each body the server's
// answer, the same at any --parallel and equal to `generate` alone; lines
// that name no request answered in place.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_lines.h"
#include "test_util.h"

using nlohmann::json;
using qinfer::test::data_path;
using qinfer::test::json_lines_of;
using qinfer::test::qinfer_binary;
using qinfer::test::run_command;
using qinfer::test::ScratchDir;

namespace {

std::string run_batch(const std::string& args) {
  return qinfer_binary() + " run-batch -m " + data_path("models/tiny") + " --served-model-name tiny " + args;
}

json completion(const std::string& id, const std::string& prompt, int max_tokens, double temperature, int seed) {
  return {{"custom_id", id},
          {"method", "POST"},
          {"url", "/v1/completions"},
          {"body",
           {{"model", "tiny"},
            {"prompt", prompt},
            {"max_tokens", max_tokens},
            {"temperature", temperature},
            {"seed", seed},
            {"ignore_eos", true}}}};
}

std::string solo_text(const std::string& prompt, int max_tokens, double temperature, int seed) {
  const auto res = run_command(qinfer_binary() + " generate -m " + data_path("models/tiny") + " -p '" + prompt +
                               "' -n " + std::to_string(max_tokens) + " --temp " + std::to_string(temperature) +
                               " --seed " + std::to_string(seed) + " --ignore-eos --json 2>/dev/null");
  EXPECT_EQ(res.exit_code, 0) << res.output;
  return json::parse(res.output)["text"].get<std::string>();
}

}  // namespace

TEST(RunBatchCli, AnswersAreTheServersInInputOrderAtAnyParallelism) {
  ScratchDir dir("run-batch");
  const std::string input = dir.file("requests.jsonl");
  std::vector<json> completions;
  for (int i = 0; i < 10; ++i)
    completions.push_back(completion("c" + std::to_string(i), i % 2 ? "Hello" : "The capital of France is", 3 + i % 4,
                                     i % 3 ? 0.8 : 0.0, i));
  completions[9]["body"]["n"] = 3;  // three choices, all answered (the engine's queue holds them)
  completions[9]["body"]["stream"] = nullptr;
  {
    std::ofstream f(input);
    for (const json& c : completions) f << c.dump() << "\n";
    f << "\n";  // blank: skipped
    f << json{{"custom_id", "chat"},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              // The file is its user's own: a priority is taken (the server refuses one unless told to).
              {"body",
               {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                {"max_tokens", 4},
                {"seed", 5},
                {"priority", -2},
                {"cache_salt", "s"}}}}
             .dump()
      << "\n";
    f << json{{"custom_id", "emb"},
              {"method", "POST"},
              {"url", "/v1/embeddings"},
              {"body", {{"input", {"hi", "there", "three", "four", "five"}}}}}
             .dump()
      << "\n";
    f << json{{"custom_id", "bad-body"},
              {"method", "POST"},
              {"url", "/v1/completions"},
              {"body", {{"prompt", "x"}, {"max_tokens", 0}}}}
             .dump()
      << "\n";
    f << "{\"custom_id\": \"get\", \"method\": \"GET\", \"url\": \"/v1/completions\", \"body\": {}}\n";
    f << "{\"custom_id\": \"models\", \"method\": \"POST\", \"url\": \"/v1/models\", \"body\": {}}\n";
    f << "{\"custom_id\": \"stream\", \"method\": \"POST\", \"url\": \"/v1/completions\", \"body\": {\"prompt\": "
         "\"x\", \"stream\": true}}\n";
    f << "{\"custom_id\": 7, \"method\": \"POST\", \"url\": \"/v1/completions\", \"body\": {}}\n";
    f << "{\"custom_id\": \"x\", \"method\": \"POST\", \"url\": \"/v1/completions\", \"body\": \"text\"}\n";
    f << "{\"custom_id\": \"a\xff\"}\n";  // not JSON: its message quotes the byte that is no UTF-8
  }
  std::vector<std::vector<json>> runs;
  for (const char* flags : {"--parallel 1", "--parallel 2 --max-batch-tokens 8"}) {
    SCOPED_TRACE(flags);
    const std::string output = dir.file("out.jsonl");
    const auto res = run_command(run_batch(std::string(flags) + " -i " + input + " -o " + output + " 2>&1"));
    ASSERT_EQ(res.exit_code, 0) << res.output;
    EXPECT_NE(res.output.find("qinfer run-batch: 19 requests in"), std::string::npos) << res.output;
    EXPECT_NE(res.output.find("12 answered 200, 7 did not"), std::string::npos) << res.output;
    std::ifstream in(output);
    std::stringstream text;
    text << in.rdbuf();
    const std::vector<json> lines = json_lines_of(text.str());
    ASSERT_EQ(lines.size(), 19u) << text.str();
    for (size_t i = 0; i < completions.size(); ++i) {
      const json& l = lines[i];
      EXPECT_EQ(l["custom_id"], completions[i]["custom_id"]);
      EXPECT_EQ(l["error"], nullptr);
      EXPECT_EQ(l["response"]["status_code"], 200);
      EXPECT_EQ(l["response"]["body"]["object"], "text_completion");
      EXPECT_EQ(l["response"]["request_id"], l["response"]["body"]["id"]);
      const int choices = i == 9 ? 3 : 1;
      EXPECT_EQ(l["response"]["body"]["choices"].size(), static_cast<size_t>(choices));
      EXPECT_EQ(l["response"]["body"]["usage"]["completion_tokens"],
                choices * completions[i]["body"]["max_tokens"].get<int>());
      EXPECT_EQ(l["id"].get<std::string>().rfind("batch_req_", 0), 0u);
    }
    EXPECT_EQ(lines[10]["custom_id"], "chat");
    EXPECT_EQ(lines[10]["response"]["body"]["object"], "chat.completion");
    EXPECT_EQ(lines[11]["response"]["body"]["data"].size(), 5u);
    EXPECT_EQ(lines[12]["custom_id"], "bad-body");
    EXPECT_EQ(lines[12]["response"]["status_code"], 400);
    EXPECT_EQ(lines[12]["response"]["body"]["error"]["param"], "max_tokens");
    const std::vector<std::pair<std::string, std::string>> refused = {{"line 15:", "\"method\" must be \"POST\""},
                                                                      {"line 16:", "\"url\" must be one of"},
                                                                      {"line 17:", "asks for a stream"},
                                                                      {"line 18:", "\"custom_id\" must be a string"},
                                                                      {"line 19:", "\"body\" must be a JSON object"},
                                                                      {"line 20:", "not valid JSON"}};
    for (size_t k = 0; k < refused.size(); ++k) {
      const json& l = lines[13 + k];
      EXPECT_EQ(l["response"], nullptr) << l.dump();
      EXPECT_EQ(l["error"]["code"], "invalid_request");
      const std::string message = l["error"]["message"];
      EXPECT_EQ(message.rfind(refused[k].first, 0), 0u) << message;
      EXPECT_NE(message.find(refused[k].second), std::string::npos) << message;
    }
    EXPECT_EQ(lines[13]["custom_id"], "get");
    EXPECT_EQ(lines[16]["custom_id"], 7) << "kept as given";
    EXPECT_EQ(lines[18]["custom_id"], nullptr);
    runs.push_back(lines);
  }
  // Batching changes no request's answer.
  for (size_t i = 0; i < 12; ++i) {
    const json& a = runs[0][i]["response"]["body"];
    const json& b = runs[1][i]["response"]["body"];
    EXPECT_EQ(a.contains("choices") ? a["choices"] : a["data"], b.contains("choices") ? b["choices"] : b["data"])
        << runs[0][i]["custom_id"];
  }
  for (size_t i : {0, 1, 5}) {
    const json& body = completions[i]["body"];
    EXPECT_EQ(runs[1][i]["response"]["body"]["choices"][0]["text"],
              solo_text(body["prompt"], body["max_tokens"], body["temperature"], body["seed"]))
        << i;
  }
}

TEST(RunBatchCli, ChatTemplateFlagsShapeEveryConversation) {
  ScratchDir dir("run-batch-template");
  std::ofstream(dir.file("t.jinja")) << "{{ greeting }} {{ messages[0].content }}";
  {
    std::ofstream f(dir.file("in.jsonl"));
    for (const json& kwargs : {json(nullptr), json{{"greeting", "Bye"}}}) {
      json body = {{"model", "tiny"},
                   {"messages", {{{"role", "user"}, {"content", "world"}}}},
                   {"max_tokens", 1},
                   {"return_token_ids", true}};
      if (!kwargs.is_null()) body["chat_template_kwargs"] = kwargs;
      f << json{{"custom_id", "c"}, {"method", "POST"}, {"url", "/v1/chat/completions"}, {"body", body}}.dump() << "\n";
    }
  }
  const auto res = run_command(run_batch("--chat-template " + dir.file("t.jinja") +
                                         " --default-chat-template-kwargs '{\"greeting\": \"Hello\"}' -i " +
                                         dir.file("in.jsonl") + " 2>/dev/null"));
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::vector<json> lines = json_lines_of(res.output);
  ASSERT_EQ(lines.size(), 2u);
  const auto ids_of = [](const std::string& text) {
    const auto r = run_command("echo '" + json{{"text", text}}.dump() + "' | " + qinfer_binary() + " tokenize -m " +
                               data_path("models/tiny") + " --jsonl");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return json::parse(r.output)["ids"];
  };
  EXPECT_EQ(lines[0]["response"]["body"]["prompt_token_ids"], ids_of("Hello world")) << lines[0].dump();
  EXPECT_EQ(lines[1]["response"]["body"]["prompt_token_ids"], ids_of("Bye world")) << lines[1].dump();
}

TEST(RunBatchCli, StandardStreamsByDefaultAndFilesItCannotUse) {
  ScratchDir dir("run-batch-io");
  const std::string line = completion("only", "Hello", 2, 0.0, 0).dump();
  auto res = run_command("echo '" + line + "' | " + run_batch("2>/dev/null"));
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::vector<json> lines = json_lines_of(res.output);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["custom_id"], "only");
  EXPECT_EQ(lines[0]["response"]["status_code"], 200);

  res = run_command(run_batch("-i " + dir.file("missing.jsonl") + " 2>&1"));
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.output.find("qinfer: error: cannot read " + dir.file("missing.jsonl")), std::string::npos)
      << res.output;
  res = run_command("echo '" + line + "' | " + run_batch("-o " + dir.path() + " 2>&1"));
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.output.find("qinfer: error: cannot write " + dir.path()), std::string::npos) << res.output;
  // A model that fails to load leaves an earlier output file as it was.
  const std::string kept = dir.file("kept.jsonl");
  std::ofstream(kept) << "earlier results\n";
  res = run_command("echo '" + line + "' | " + qinfer_binary() + " run-batch -m " + dir.file("no-model") + " -o " +
                    kept + " 2>&1");
  EXPECT_EQ(res.exit_code, 1) << res.output;
  std::ifstream earlier(kept);
  std::string first;
  std::getline(earlier, first);
  EXPECT_EQ(first, "earlier results");
  // ... and makes none where there was none.
  res = run_command("echo '" + line + "' | " + qinfer_binary() + " run-batch -m " + dir.file("no-model") + " -o " +
                    dir.file("new.jsonl") + " 2>&1");
  EXPECT_EQ(res.exit_code, 1) << res.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("new.jsonl")));
  // A FIFO is opened once, when the results start (checking it first gave
  // its reader an end of file, and the run then waited for another forever).
  const std::string fifo = dir.file("results.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  res = run_command("(cat " + fifo + " > " + dir.file("from-fifo.jsonl") + " &); echo '" + line + "' | timeout 60 " +
                    run_batch("-o " + fifo + " 2>&1"));
  EXPECT_EQ(res.exit_code, 0) << res.output;
  for (int i = 0; i < 100 && std::filesystem::file_size(dir.file("from-fifo.jsonl")) == 0; ++i) ::usleep(20000);
  std::ifstream from_fifo(dir.file("from-fifo.jsonl"));
  std::stringstream fifo_text;
  fifo_text << from_fifo.rdbuf();
  ASSERT_EQ(json_lines_of(fifo_text.str()).size(), 1u) << fifo_text.str();
  // No lines: no results, and no error.
  res = run_command(run_batch("< /dev/null 2>/dev/null"));
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_EQ(res.output, "");
  res = run_command("echo '" + line + "' | " + run_batch("2>&1 >/dev/full"));
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.output.find("qinfer: error: writing standard output failed"), std::string::npos) << res.output;
}
