// A scripted `qinfer chat` session through a pipe: the prompt ids the model
// receives on turn 2 are the chat template's rendering of the whole history.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/conversation.h"
#include "runtime/model_bundle.h"
#include "runtime/session.h"
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

// `qinfer chat -m tiny ARGS` with stdin on `in`, stdout on `out` (-1: this
// process's) and stderr into the file `err`; the child closes `also_close`.
pid_t spawn_chat(int in, int out, const std::string& err, const std::vector<std::string>& args,
                 std::initializer_list<int> also_close) {
  std::vector<std::string> argv = {test::qinfer_binary(), "chat", "-m", test::data_path("models/tiny")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;  // made before the fork: the child only calls what is safe there
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::dup2(in, STDIN_FILENO);
  if (out >= 0) ::dup2(out, STDOUT_FILENO);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(err_fd, STDERR_FILENO);
  for (int fd : {in, out, err_fd})
    if (fd > STDERR_FILENO) ::close(fd);
  for (int fd : also_close) ::close(fd);
  ::execv(c_argv[0], c_argv.data());
  ::_exit(127);
}

// Waits for a spawn_chat child: its exit code (-1 when a signal ended it), and its stderr.
int wait_chat(pid_t pid, const std::string& err, std::string& stderr_text) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  std::ifstream err_in(err);
  stderr_text.assign(std::istreambuf_iterator<char>(err_in), std::istreambuf_iterator<char>());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
  const std::string reply = b.tokenizer->decode(s.generate(p1, o, nullptr).ids, true);
  EXPECT_NE(r.output.find(reply), std::string::npos) << "reply 1 is printed";
  conv.assistant_reply(reply);
  const auto p2 = conv.user_turn("And of Spain?");
  EXPECT_EQ(turns[1]["prompt_ids"].get<std::vector<int32_t>>(), p2);

  // And that rendering is the Qwen3 ChatML layout with the whole history.
  const std::string text = b.tokenizer->decode(p2);
  EXPECT_EQ(
      text.rfind("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
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
  EXPECT_EQ(t2, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
      << "reset clears history";
}

TEST(Conversation, ThinkSplitterSeparatesReasoning) {
  ThinkSplitter s;
  std::string thinking, answer;
  for (const char* piece : {"<think>", "\nhmm", " ok\n", "</think>", "\n\nThe answer", " is 4"})
    for (const auto& p : s.push(piece)) (p.thinking ? thinking : answer) += p.text;
  EXPECT_EQ(thinking, "<think>\nhmm ok\n</think>\n\n");
  EXPECT_EQ(answer, "The answer is 4") << "--hide-thinking printed the separating newlines (a hunt finding)";
  ThinkSplitter t;
  auto parts = t.push("a<think>b</think>c");
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_FALSE(parts[0].thinking);
  EXPECT_TRUE(parts[2].thinking);
  EXPECT_EQ(parts[4].text, "c");
  EXPECT_FALSE(parts[4].thinking);
  // A hunt finding: tags cut into pieces (a stop string can hold back a tag's tail) were not seen.
  ThinkSplitter u;
  thinking.clear();
  answer.clear();
  for (const char* piece : {"<thi", "nk>", "hm <", "/th", "ink>", "\n", "\nA <", "b"})
    for (const auto& p : u.push(piece)) (p.thinking ? thinking : answer) += p.text;
  for (const auto& p : u.push(" <")) (p.thinking ? thinking : answer) += p.text;
  for (const auto& p : u.finish()) (p.thinking ? thinking : answer) += p.text;
  EXPECT_EQ(thinking, "<think>hm </think>\n\n");
  EXPECT_EQ(answer, "A <b <");
}

namespace {

struct ChatRun {
  int exit_code;
  std::string out, err;
  std::vector<json> turns;
};

ChatRun chat(const std::string& input, const std::string& flags) {
  test::ScratchDir dir("chat");
  std::ofstream(dir.file("in.txt")) << input;
  const auto r =
      test::run_command(test::qinfer_binary() + " chat -m " + test::data_path("models/tiny") + " --print-prompt-ids " +
                        flags + " < " + dir.file("in.txt") + " 2> " + dir.file("err.txt"));
  std::ifstream in(dir.file("err.txt"));
  std::stringstream err;
  err << in.rdbuf();
  return {r.exit_code, r.output, err.str(), json_lines(dir.file("err.txt"))};
}

// The user message of a turn's prompt.
std::string last_user_message(const Tokenizer& tok, const json& turn) {
  const std::string text = tok.decode(turn["prompt_ids"].get<std::vector<int32_t>>());
  const size_t b = text.rfind("user\n") + 5;
  return text.substr(b, text.find("<|im_end|>", b) - b);
}

}  // namespace

TEST(ChatCli, CommandsAreNotSentToTheModel) {
  const ChatRun r = chat("/help\n/frobnicate now\nHi\n/no_think Hello\n", "--temp 0 -n 2");
  EXPECT_EQ(r.exit_code, 1) << "through a pipe, a message without a reply fails the run: " << r.err;
  EXPECT_NE(r.err.find("1 message of the input got no reply"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[unknown command /frobnicate: /help lists the commands]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/reset, /clear"), std::string::npos) << "/help lists the commands: " << r.err;
  ASSERT_EQ(r.turns.size(), 2u) << r.err;
  ModelBundle b = load_model_bundle(test::data_path("models/tiny"));
  EXPECT_EQ(last_user_message(*b.tokenizer, r.turns[0]), "Hi");
  EXPECT_EQ(last_user_message(*b.tokenizer, r.turns[1]), "/no_think Hello") << "Qwen3's switches go to the model";
}

TEST(ChatCli, MultiLineMessages) {
  const ChatRun r = chat("one\\\ntwo\n\"\"\"\nblock a\n\nblock b\n\"\"\"\n", "--temp 0 -n 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.turns.size(), 2u) << r.err;
  ModelBundle b = load_model_bundle(test::data_path("models/tiny"));
  EXPECT_EQ(last_user_message(*b.tokenizer, r.turns[0]), "one\ntwo");
  EXPECT_EQ(last_user_message(*b.tokenizer, r.turns[1]), "block a\n\nblock b");
}

// Turn 2 reuses turn 1's keys/values through the engine's prefix cache, and
// its reply is exactly what a fresh Session computes from the whole prompt.
TEST(ChatCli, LaterTurnsComeFromThePrefixCacheWithTheSameReply) {
  const std::string system = "You are a helpful assistant who answers every question briefly and exactly.";
  const ChatRun r = chat("What is the capital of France?\nAnd of Spain?\n", "--temp 0 -n 6 --system '" + system + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.turns.size(), 2u);
  std::vector<std::pair<long, long>> stats;  // prompt tokens, cached
  for (size_t at = r.err.find("prompt tokens ("); at != std::string::npos; at = r.err.find("prompt tokens (", at + 1)) {
    const size_t open = r.err.rfind('[', at);
    stats.emplace_back(std::stol(r.err.substr(open + 1)), std::stol(r.err.substr(at + 15)));
  }
  ASSERT_EQ(stats.size(), 2u) << r.err;
  EXPECT_EQ(stats[0].first, static_cast<long>(r.turns[0]["prompt_ids"].size()));
  EXPECT_EQ(stats[0].second, 0);
  EXPECT_EQ(stats[1].first, static_cast<long>(r.turns[1]["prompt_ids"].size()));
  EXPECT_GE(stats[1].second, 16) << "at least the system prompt's first block: " << r.err;
  EXPECT_EQ(stats[1].second % 16, 0) << "whole blocks";

  ModelBundle b = load_model_bundle(test::data_path("models/tiny"));
  ThreadPool pool(1);
  GenerationOptions o;
  o.max_new_tokens = 6;
  o.sampling.temperature = 0;
  o.eos_ids = b.eos_ids();
  for (const json& turn : r.turns) {
    Session fresh(*b.model, pool);
    const std::string reply =
        b.tokenizer->decode(fresh.generate(turn["prompt_ids"].get<std::vector<int32_t>>(), o, nullptr).ids, true);
    EXPECT_NE(r.out.find(reply), std::string::npos) << reply;
  }
}

// A hunt finding: one message of invalid UTF-8 through a pipe ended the
// whole chat with an error; it is refused alone, and the chat goes on.
TEST(ChatCli, AMessageOfInvalidUtf8IsRefusedAndTheChatGoesOn) {
  const ChatRun r = chat("Hi\n\xff\xfe\nBye\n", "--temp 0 -n 4 --no-think");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("[the message is not valid UTF-8 (byte offset 0): not sent]"), std::string::npos) << r.err;
  EXPECT_EQ(r.turns.size(), 2u) << r.err;
  const ChatRun system = chat("Hi\n", "--system \"$(printf '\\377')\"");
  EXPECT_EQ(system.exit_code, 1);
  EXPECT_NE(system.err.find("the system prompt (--system) is not valid UTF-8"), std::string::npos) << system.err;
}

// A hunt finding: a chat template that raised on one message (a template's
// raise_exception) ended the whole chat; that message is refused, and the
// next turn's prompt holds the others alone.
TEST(ChatCli, AMessageTheTemplateRefusesIsNotSentAndTheChatGoesOn) {
  namespace fs = std::filesystem;
  test::ScratchDir dir("chat-raise");
  const std::string model = dir.file("model");
  fs::create_directory(model);
  for (const auto& e : fs::directory_iterator(test::data_path("models/tiny")))
    fs::create_symlink(e.path(), fs::path(model) / e.path().filename());
  std::ofstream(model + "/chat_template.jinja")
      << "{% for m in messages %}{% if m.content == 'bad' %}{{ raise_exception('no bad words') }}{% endif %}"
         "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";
  std::ofstream(dir.file("in.txt")) << "hi\nbad\nthird\n";
  const auto r =
      test::run_command(test::qinfer_binary() + " chat -m " + model + " --print-prompt-ids --temp 0 -n 2 < " +
                        dir.file("in.txt") + " 2> " + dir.file("err.txt"));
  std::ifstream in(dir.file("err.txt"));
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.exit_code, 1) << "through a pipe, a message without a reply fails the run: " << err;
  EXPECT_NE(err.find("no bad words"), std::string::npos) << err;
  EXPECT_NE(err.find("not sent]"), std::string::npos) << err;
  const std::vector<json> turns = json_lines(dir.file("err.txt"));
  ASSERT_EQ(turns.size(), 2u) << err;
  const Tokenizer tok = Tokenizer::from_file(test::data_path("models/tiny/tokenizer.json"));
  const std::string second = tok.decode(turns[1]["prompt_ids"].get<std::vector<int32_t>>());
  EXPECT_NE(second.find("user\nthird"), std::string::npos) << second;
  EXPECT_EQ(second.find("bad"), std::string::npos) << second;
}

TEST(ChatCli, TakesTheGenerationFlags) {
  ChatRun r = chat("Hi\n", "--temp 0 -n 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-n 0: give at least 1 token, or -1"), std::string::npos) << r.err;
  r = chat("Hi\n", "--temp 0 -n -1 --ctx 24 --no-think --weights q8 --kv f16 -t 1 --seed 3 --top-k 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cut: the context is full"), std::string::npos) << r.err;
  r = chat("Hello there, how are you today?\n", "--temp 0 --ctx 8");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fills the context of 8 tokens"), std::string::npos) << r.err;
}

// A hunt finding: Ctrl-C while a write to a slow terminal was blocked made
// the write fail with EINTR (the handler has no SA_RESTART, so that reads
// return): the text was lost, and the chat ended with exit 1, "writing to
// standard output failed". Here the terminal is a 4 KiB pipe nobody reads.
TEST(ChatCli, CtrlCWhileTheOutputIsBlockedLosesNothing) {
  test::ScratchDir dir("chat-blocked");
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  ::fcntl(out[1], F_SETPIPE_SZ, 4096);
  const std::string err = dir.file("err.txt");
  const pid_t pid = spawn_chat(in[0], out[1], err, {"--temp", "0", "-n", "3000", "-t", "1"}, {in[1], out[0]});
  ASSERT_GT(pid, 0);
  ::close(in[0]);
  ::close(out[1]);
  ASSERT_EQ(::write(in[1], "hi\n", 3), 3);
  // The reply fills the pipe, then a write blocks: the bytes queued stop growing.
  int queued = 0, steady = 0;
  for (int i = 0, last = -1; i < 1200 && steady < 6; ++i, last = queued) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::ioctl(out[0], FIONREAD, &queued);
    steady = queued == last && queued > 3072 ? steady + 1 : 0;
  }
  EXPECT_EQ(steady, 6) << queued;
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(in[1]);  // then the end of input ends the chat
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) output.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  std::string stderr_text;
  EXPECT_EQ(wait_chat(pid, err, stderr_text), 0) << stderr_text;
  EXPECT_EQ(stderr_text.find("failed"), std::string::npos) << stderr_text;
  EXPECT_GT(output.size(), 4096u) << "the reply went on past the full pipe";
}

// Hunt findings: through a pipe, messages the chat did not answer (refused,
// or cut by the end of the input inside a """ block or after a \) left
// the exit status 0, so a script could not know; a SIGINT while it waited
// for input wrote a newline to stdout and went on reading.
TEST(ChatCli, ThroughAPipeAMessageWithoutAReplyFailsTheRunAndSigintEndsIt) {
  for (const char* input : {"Hi\n\"\"\"\nnot closed\n", "Hi\nends in a backslash\\\n"}) {
    const ChatRun r = chat(input, "--temp 0 -n 2 --no-think");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.turns.size(), 1u) << r.err;
    EXPECT_NE(r.err.find("the input ended inside a message"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1 message of the input got no reply"), std::string::npos) << r.err;
  }
  EXPECT_EQ(chat("Hi\n\"\"\"\nclosed\n\"\"\"\n", "--temp 0 -n 2 --no-think").exit_code, 0);

  test::ScratchDir dir("chat-sigint");
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  const std::string err = dir.file("err.txt");
  const pid_t pid =
      spawn_chat(in[0], out[1], err, {"--temp", "0", "-n", "2", "-t", "1", "--no-think"}, {in[1], out[0]});
  ASSERT_GT(pid, 0);
  ::close(in[0]);
  ::close(out[1]);
  ASSERT_EQ(::write(in[1], "hi\n", 3), 3);
  // Once the reply's stats are on stderr, the chat waits for the next message.
  for (int i = 0; i < 600; ++i) {
    std::ifstream e(err);
    const std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    if (text.find("tokens at") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::close(in[1]);  // had the chat read on, the end of its input ends it (with exit 0)
  std::string output;
  char buf[4096];
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) output.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(output.back(), '\n') << output;
  EXPECT_EQ(output.find("\n\n", output.size() - 2), std::string::npos) << "no newline of its own: " << output;
  ::close(out[0]);
}

// A hunt finding: a failed read of standard input (here a connection its peer
// resets) was taken for its end: the chat ended with exit 0, saying nothing.
TEST(ChatCli, AFailedReadOfStandardInputIsAnErrorNotTheEnd) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int peer = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  ASSERT_EQ(::send(peer, "hello\n", 6, 0), 6);
  const linger reset{1, 0};  // closing sends a reset, not the end of the stream
  ::setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(peer);
  test::ScratchDir dir("chat-reset");
  const std::string err = dir.file("err.txt");
  const pid_t pid = spawn_chat(client, -1, err, {"-n", "2", "-t", "1"}, {});
  ASSERT_GT(pid, 0);
  ::close(client);
  std::string stderr_text;
  EXPECT_EQ(wait_chat(pid, err, stderr_text), 1) << stderr_text;
  EXPECT_NE(stderr_text.find("reading standard input failed: Connection reset by peer"), std::string::npos)
      << stderr_text;
}

// A hunt finding: every reply sampled with the run's one seed, so asking
// again after /reset gave the identical "sampled" reply. Turn k samples with
// seed + k - 1: replies differ, and the same --seed repeats the whole chat.
TEST(ChatCli, EachTurnSamplesWithItsOwnSeedAndTheSeedRepeatsTheChat) {
  const std::string input = "Hi\n/reset\nHi\n/reset\nHi\n";
  const ChatRun a = chat(input, "--temp 1 -n 8 --no-think --seed 7"),
                b = chat(input, "--temp 1 -n 8 --no-think --seed 7");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const std::string first = chat("Hi\n", "--temp 1 -n 8 --no-think --seed 7").out;  // turn 1 alone
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(a.out.substr(0, first.size()), first);
  EXPECT_NE(a.out, first + first + first);
  // A re-hunt finding: a message refused (it filled the context) counted as a reply, so the next reply was seed 8's.
  std::string long_message;
  for (int i = 0; i < 80; ++i) long_message += "word ";
  long_message += "\n";
  EXPECT_EQ(chat(long_message + "Hi\n", "--temp 1 -n 8 --no-think --seed 7 --ctx 64").out,
            chat("Hi\n", "--temp 1 -n 8 --no-think --seed 7 --ctx 64").out);
}

// A hunt finding: sampling flags and stop strings were checked at the first
// message (the model loaded, a message typed, then exit 1 naming "top_p", and
// with no message no error at all). They are command-line errors now: exit 2
// naming the flag, before anything is loaded.
TEST(ChatCli, SamplingFlagsAndStopsAreCheckedWhenTheCommandLineIs) {
  for (const std::string flags :
       {"--top-p 2", "--top-p 0", "--temp -1", "--temp nan", "--min-p 1.5", "--top-k -2", "--repeat-penalty 0",
        "--presence-penalty inf", "--frequency-penalty nan", "--stop ''", "--stop \"$(printf '\\360\\237')\""}) {
    for (const std::string input : {"", "Hi\n"}) {
      const ChatRun r = chat(input, flags + " -n 2");
      EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
      EXPECT_NE(r.err.find(flags.substr(0, flags.find(' '))), std::string::npos) << flags << "\n" << r.err;
      EXPECT_TRUE(r.turns.empty()) << flags;
    }
  }
  // -1 turns top-k off, as the server's top_k -1 (vLLM's) does.
  const ChatRun off = chat("Hi\n", "--top-k -1 --temp 0 -n 2"), zero = chat("Hi\n", "--top-k 0 --temp 0 -n 2");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out, zero.out);
}

// --thinking-budget (vLLM's thinking_token_budget) on a scripted model that
// reasons: the reply's reasoning holds that many tokens, then </think>, then
// the script's answer; a budget below -1 is a usage error.
TEST(ChatCli, AThinkingBudgetCutsTheReasoningAndTheAnswerFollows) {
  test::ScratchDir dir("chat-thinking");
  const std::string reasoning = "Two plus two makes four.";
  const auto made = test::run_command(test::qinfer_binary() + " make-test-model --preset tiny --out " + dir.file("m") +
                                      " --script '<think>" + reasoning + "</think>\n\nThe answer is 4' 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::ofstream(dir.file("in.txt")) << "What is 2+2?\n";
  auto run = [&](const std::string& flags) {
    return test::run_command(test::qinfer_binary() + " chat -m " + dir.file("m") + " --temp 0 " + flags + " < " +
                             dir.file("in.txt") + " 2>" + dir.file("err.txt") + "; cat " + dir.file("err.txt") +
                             " | grep -v '^\\['");  // stdout, then what stderr says but the reply's figures
  };
  const ModelBundle bundle = load_model_bundle(dir.file("m"));
  const std::vector<int32_t> ids = bundle.tokenizer->encode(reasoning);
  const std::string two = bundle.tokenizer->decode(std::span<const int32_t>(ids.data(), 2));
  auto r = run("");
  EXPECT_EQ(r.output, "<think>" + reasoning + "</think>\n\nThe answer is 4\n");
  r = run("--thinking-budget 2");
  EXPECT_EQ(r.output, "<think>" + two + "</think>\n\nThe answer is 4\n");
  // A review finding: a "<think>" in the message made the budget count from the reply's first id.
  std::ofstream(dir.file("in.txt")) << "What does <think> do?\n";
  r = run("--thinking-budget 2");
  EXPECT_EQ(r.output, "<think>" + two + "</think>\n\nThe answer is 4\n");
  r = run("--thinking-budget 0 --hide-thinking");
  EXPECT_EQ(r.output, "The answer is 4\n");
  r = run("--thinking-budget -2");
  EXPECT_NE(r.output.find("--thinking-budget: Value -2 not in range"), std::string::npos) << r.output;
  r = run("--thinking-budget 2147483648");  // a hunt finding: 2^31 was taken, the server's limit is 2^31 - 1
  EXPECT_NE(r.output.find("--thinking-budget: Value 2147483648 not in range"), std::string::npos) << r.output;
}
