// Sampling defaults as transformers derives them from generation_config.json;
// the files of a checkpoint checked against each other.
#include "runtime/model_bundle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

// A hunt finding: a generation_config.json with do_sample but no top_k
// sampled from the whole vocabulary; transformers' GenerationConfig fills the
// missing field with its default, top_k 50.
TEST(ModelBundle, MissingSamplingFieldsTakeTransformersDefaults) {
  ModelBundle b;
  b.generation.do_sample = true;
  b.generation.temperature = 0.7f;
  SamplingParams p = b.default_sampling();
  EXPECT_FLOAT_EQ(p.temperature, 0.7f);
  EXPECT_EQ(p.top_k, 50);
  EXPECT_FLOAT_EQ(p.top_p, 1.0f);
  EXPECT_FLOAT_EQ(p.min_p, 0.0f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.0f);
  b.generation.top_k = 0;  // given: taken as it is (0 = off)
  EXPECT_EQ(b.default_sampling().top_k, 0);
  b.generation.do_sample = false;
  EXPECT_EQ(b.default_sampling().temperature, 0.0f) << "greedy without do_sample";
  b.generation.do_sample.reset();
  EXPECT_EQ(b.default_sampling().temperature, 0.0f);
  b.generation.top_p = 0.0f;  // a greedy config's, unused: no default for a request that samples
  EXPECT_FLOAT_EQ(b.default_sampling().top_p, 1.0f);
}

// An audit finding: a tokenizer with ids past config.json's vocab_size (the
// tokenizer of another model) loaded, then every request holding one of
// those tokens failed as the client's mistake ("token id 160000 is outside
// the vocabulary").
TEST(ModelBundle, ATokenizerWithIdsBeyondTheModelsVocabularyIsRefusedAtLoad) {
  test::ScratchDir dir("bundle-vocab");
  for (const auto& f : std::filesystem::directory_iterator(test::data_path("models/tiny")))
    std::filesystem::copy_file(f.path(), dir.file(f.path().filename().string()));
  nlohmann::json tokenizer = nlohmann::json::parse(std::ifstream(dir.file("tokenizer.json")));
  tokenizer["added_tokens"].push_back({{"id", 160000},
                                       {"content", "<|weird|>"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", true}});
  std::ofstream(dir.file("tokenizer.json")) << tokenizer.dump();
  try {
    load_model_bundle(dir.path());
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/tokenizer.json has token id 160000, beyond config.json's vocab_size 151936"),
              std::string::npos)
        << e.what();
  }
}
