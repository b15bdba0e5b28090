// The Qwen3 tokenizer against the fixtures made with Hugging Face tokenizers:
// every corpus string's ids and decodes, the decode cases, the Unicode 9 NFC
// quirks, and streaming decode == whole decode.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "text/detokenizer.h"
#include "text_fixtures.h"
#include "util/error.h"
#include "util/mapped_file.h"

using namespace qinfer;
using nlohmann::json;

namespace {

std::string streamed(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  StreamingDetokenizer detok(tok, skip_special);
  std::string text;
  for (int32_t id : ids) {
    const std::string piece = detok.push(id);
    text += piece;
  }
  return text + detok.flush();
}

// Each record: text -> ids, ids -> decoded / decoded_skip_special. Reports every failure, counts passes.
void check_records(const std::string& fixture) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  const auto records = test::read_jsonl(test::data_path(fixture));
  size_t ids_ok = 0, decode_ok = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    const auto expected = r["ids"].get<std::vector<int32_t>>();
    const auto ids = tok.encode(r["text"].get<std::string>());
    if (ids == expected)
      ++ids_ok;
    else
      ADD_FAILURE() << fixture << " line " << i + 1 << " (" << r["cat"] << ") " << r["text"].dump() << "\n  ids  "
                    << test::ids_to_string(ids) << "\n  want " << test::ids_to_string(expected);
    const std::string decoded = r["decoded"];
    const std::string decoded_skip = r.value("decoded_skip_special", decoded);
    const bool ok = tok.decode(expected) == decoded && tok.decode(expected, true) == decoded_skip;
    if (ok)
      ++decode_ok;
    else
      ADD_FAILURE() << fixture << " line " << i + 1 << ": decode " << json(tok.decode(expected)).dump() << " / skip "
                    << json(tok.decode(expected, true)).dump();
  }
  std::cout << fixture << ": ids " << ids_ok << "/" << records.size() << ", decode " << decode_ok << "/"
            << records.size() << "\n";
}

}  // namespace

TEST(Tokenizer, CorpusIdsAndDecodes) { check_records("tokenizer/corpus.jsonl"); }

// HF's NFC uses Unicode 9 tables; we match that (see src/text/nfc.h).
TEST(Tokenizer, HfUnicode9NfcQuirks) { check_records("tokenizer/hf_unicode9_nfc_quirks.jsonl"); }

TEST(Tokenizer, DecodeCases) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  const auto cases = test::read_jsonl(test::data_path("tokenizer/decode_cases.jsonl"));
  ASSERT_EQ(cases.size(), 60u);
  for (const json& c : cases) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << c["name"];
    EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>()) << c["name"];
    EXPECT_EQ(streamed(tok, ids, false), c["decoded"].get<std::string>()) << c["name"];
    EXPECT_EQ(streamed(tok, ids, true), c["decoded_skip_special"].get<std::string>()) << c["name"];
  }
}

TEST(Tokenizer, StreamingEqualsWholeDecodeOnCorpus) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  size_t n = 0;
  for (const json& r : test::read_jsonl(test::data_path("tokenizer/corpus.jsonl"))) {
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    for (bool skip : {false, true}) ASSERT_EQ(streamed(tok, ids, skip), tok.decode(ids, skip)) << r["text"].dump();
    ++n;
  }
  EXPECT_EQ(n, 2852u);
}

TEST(Tokenizer, StreamingNeverSplitsACharacter) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  const auto ids = tok.encode("日本語 😀 é");  // byte tokens: every push yields whole characters or nothing
  StreamingDetokenizer detok(tok);
  std::vector<std::string> pushes;
  for (int32_t id : ids) pushes.push_back(detok.push(id));
  for (const std::string& p : pushes) EXPECT_EQ(tok.decode(tok.encode(p)), p);  // each is valid UTF-8 on its own
  std::string all;
  for (const std::string& p : pushes) all += p;
  EXPECT_EQ(all + detok.flush(), "日本語 😀 é");
}

TEST(Tokenizer, CasesPeopleGetWrong) {  // the list in tests/data/FIXTURES.md
  const Tokenizer& tok = test::qwen3_tokenizer();
  const std::vector<std::pair<std::string, std::vector<int32_t>>> cases = {
      {"a   b", {64, 256, 293}},
      {"hello   ", {14990, 262}},
      {"end.\n\nNext", {408, 382, 5847}},
      {"2024", {17, 15, 17, 19}},
      {"it's IT'S we'LL don't", {275, 594, 8700, 13272, 582, 6, 4086, 1513, 944}},
      {"e\u0301", {963}},
      {"<think>\u0338", {151667, 136, 116}},
      {"abc<|endoftext|>def", {13683, 151643, 750}},
      {"a \ufeffb", {64, 75780, 65}},
  };
  for (const auto& [text, ids] : cases) EXPECT_EQ(tok.encode(text), ids) << text;
}

TEST(Tokenizer, Lookups) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 151669u);
  EXPECT_EQ(tok.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(tok.token_to_id("\xC4\xA0the"), 279);  // "Ġthe"
  EXPECT_EQ(tok.token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(tok.id_to_piece(279), "\xC4\xA0the");
  EXPECT_EQ(tok.id_to_piece(151667), "<think>");
  EXPECT_EQ(tok.id_to_piece(151669), "");
  EXPECT_EQ(tok.id_to_piece(-1), "");
  EXPECT_TRUE(tok.is_special(151643));
  EXPECT_FALSE(tok.is_special(151667));  // <think> is special: false
  EXPECT_FALSE(tok.is_special(279));
  EXPECT_EQ(tok.token_bytes(279), " the");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{151669, 151935, -5, 200000}), "");  // ids naming nothing decode to nothing
}

TEST(Tokenizer, EmptyText) {
  EXPECT_TRUE(test::qwen3_tokenizer().encode("").empty());
  EXPECT_EQ(test::qwen3_tokenizer().decode({}), "");
}

// encode_at_most gives encode's ids when they fit the limit and nothing when
// they do not, at each limit around the count, across added tokens too.
TEST(Tokenizer, EncodeAtMostIsEncodeWithinTheLimit) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  const auto records = test::read_jsonl(test::data_path("tokenizer/corpus.jsonl"));
  size_t refused = 0;
  for (const json& r : records) {
    const std::string text = r["text"].get<std::string>() + "<|im_end|>" + r["text"].get<std::string>();
    const std::vector<int32_t> whole = tok.encode(text);
    for (size_t limit : {size_t{0}, size_t{1}, whole.size() / 2, whole.size() - 1, whole.size(), whole.size() + 1}) {
      const auto ids = tok.encode_at_most(text, limit);
      if (whole.size() <= limit) {
        ASSERT_TRUE(ids.has_value()) << text << " limit " << limit;
        EXPECT_EQ(*ids, whole) << text;
      } else {
        EXPECT_FALSE(ids.has_value()) << text << " limit " << limit;
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 3 * records.size());
  EXPECT_EQ(tok.encode_at_most("<|im_end|>", 0), std::nullopt);
  EXPECT_EQ(tok.encode_at_most("<|im_end|>", 1), std::vector<int32_t>{151645});
  EXPECT_EQ(tok.encode_at_most("", 0), std::vector<int32_t>{});
}

// A huge text is refused without being encoded whole: one pre-tokenizer
// piece of 16 MiB (BPE'd, it takes minutes) and millions of short ones.
TEST(Tokenizer, EncodeAtMostRefusesHugeTextsEarly) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  EXPECT_EQ(tok.encode_at_most(std::string(16 << 20, 'a'), 4096), std::nullopt);
  std::string words;
  for (int i = 0; i < (2 << 20); ++i) words += " word";
  EXPECT_EQ(tok.encode_at_most(words, 4096), std::nullopt);
  EXPECT_EQ(tok.encode_at_most(words.substr(0, 5 * 4096), 4096)->size(), 4096u);
}

TEST(Tokenizer, InvalidUtf8NamesTheByteOffset) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  for (const auto& [text, offset] : std::vector<std::pair<std::string, int>>{
           {"abc\xFF", 3}, {"h\xC3", 1}, {"ok \xED\xA0\x80", 3}, {"\xC0\x80", 0}, {"\xF4\x90\x80\x80", 0}}) {
    try {
      tok.encode(text);
      ADD_FAILURE() << "no error for " << json(text).dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("byte offset " + std::to_string(offset)), std::string::npos) << e.what();
    }
  }
}

// allow_special=false behaves as if the special (special: true) added tokens
// did not exist: compare with a tokenizer built without them.
TEST(Tokenizer, SpecialTextAsPlainText) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  json spec = json::parse(read_text_file(test::data_path("tokenizer.json")));
  json kept = json::array();
  for (const json& t : spec["added_tokens"])
    if (!t["special"].get<bool>()) kept.push_back(t);
  spec["added_tokens"] = kept;
  const Tokenizer without_special = Tokenizer::from_json(spec.dump());
  for (const std::string text : {"<|im_start|>user\nhi<|im_end|>", "<think>x</think><|endoftext|>", "<|im_end",
                                 "a<|endoftext|>b <tool_call>{}</tool_call>"}) {
    const auto plain = tok.encode(text, false);
    EXPECT_EQ(plain, without_special.encode(text)) << text;
    EXPECT_EQ(tok.decode(plain), text);
    for (int32_t id : plain) EXPECT_FALSE(tok.is_special(id)) << text;
  }
  EXPECT_EQ(tok.encode("<think>", false), std::vector<int32_t>{151667});  // special: false still matches
}

// The word cache serves one encode call at a time; calls that find it busy
// run without it. Either way the ids must be exact.
TEST(Tokenizer, ConcurrentEncodeIsExact) {
  const Tokenizer& tok = test::qwen3_tokenizer();
  const auto records = test::read_jsonl(test::data_path("tokenizer/corpus.jsonl"));
  std::atomic<size_t> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t % 2; i < records.size(); i += 2) {  // two threads on each half
        if (tok.encode(records[i]["text"].get<std::string>()) != records[i]["ids"].get<std::vector<int32_t>>()) ++wrong;
        ++done;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(done.load(), records.size() * 2);
}
