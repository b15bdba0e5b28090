// A scripted `qinfer chat` session through a pipe: the prompt ids the model
// receives on turn 2 are the chat template's rendering of the whole history.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/conversation.h"
#include "runtime/model_bundle.h"
#include "runtime/text_generation.h"
#include "test_util.h"

using namespace qinfer;
using nlohmann::json;

namespace {

std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST(ChatCli, TurnTwoPromptIsTheTemplatedHistory) {
  test::ScratchDir dir("chat");
  std::ofstream(dir.file("in.txt")) << "What is the capital of France?\nAnd of Spain?\n/exit\nnever read\n";
  const auto r = test::run_command(test::qinfer_binary() + " chat -m " + test::data_path("models/tiny") +
                                   " --temp 0 -n 6 --print-prompt-ids --system 'Be brief.' < " + dir.file("in.txt") +
                                   " 2> " + dir.file("err.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto turns = json_lines(dir.file("err.txt"));
  ASSERT_EQ(turns.size(), 2u) << "/exit must end the session";

  // Replay turn 1 in-process to know the reply, then build the expected turn-2 prompt.
  ModelBundle b = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(1);
  Session s(*b.model, pool);
  Conversation conv(*b.chat_template, *b.tokenizer, "Be brief.", std::nullopt);
  const auto p1 = conv.user_turn("What is the capital of France?");
  EXPECT_EQ(turns[0]["prompt_ids"].get<std::vector<int32_t>>(), p1);
  GenerationOptions o;
  o.max_new_tokens = 6;
  o.sampling.temperature = 0;
  o.eos_ids = b.eos_ids();
  const auto reply = generate_text(s, *b.tokenizer, p1, o, {}, nullptr);
  EXPECT_NE(r.output.find(reply.text), std::string::npos) << "reply 1 is printed";
  conv.assistant_reply(reply.text);
  const auto p2 = conv.user_turn("And of Spain?");
  EXPECT_EQ(turns[1]["prompt_ids"].get<std::vector<int32_t>>(), p2);

  // And that rendering is the Qwen3 ChatML layout with the whole history.
  const std::string text = b.tokenizer->decode(p2);
  EXPECT_EQ(text.rfind("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                       "<|im_start|>assistant\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("<|im_end|>\n<|im_start|>user\nAnd of Spain?<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << text;
}

TEST(ChatCli, NoThinkAndResetShapeThePrompt) {
  test::ScratchDir dir("chat");
  std::ofstream(dir.file("in.txt")) << "Hi\n/reset\nHello\n";
  const auto r = test::run_command(test::qinfer_binary() + " chat -m " + test::data_path("models/tiny") +
                                   " --temp 0 -n 3 --no-think --print-prompt-ids < " + dir.file("in.txt") + " 2> " +
                                   dir.file("err.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto turns = json_lines(dir.file("err.txt"));
  ASSERT_EQ(turns.size(), 2u);
  ModelBundle b = load_model_bundle(test::data_path("models/tiny"));
  const std::string t1 = b.tokenizer->decode(turns[0]["prompt_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(t1, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  const std::string t2 = b.tokenizer->decode(turns[1]["prompt_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(t2, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n") << "reset clears history";
}

TEST(Conversation, ThinkSplitterSeparatesReasoning) {
  ThinkSplitter s;
  std::string thinking, answer;
  for (const char* piece : {"<think>", "\nhmm", " ok\n", "</think>", "\n\nThe answer", " is 4"})
    for (const auto& p : s.push(piece)) (p.thinking ? thinking : answer) += p.text;
  EXPECT_EQ(thinking, "<think>\nhmm ok\n</think>");
  EXPECT_EQ(answer, "\n\nThe answer is 4");
  ThinkSplitter t;
  auto parts = t.push("a<think>b</think>c");
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_FALSE(parts[0].thinking);
  EXPECT_TRUE(parts[2].thinking);
  EXPECT_EQ(parts[4].text, "c");
  EXPECT_FALSE(parts[4].thinking);
}
