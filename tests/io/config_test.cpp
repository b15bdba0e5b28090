#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/hf_config.h"
#include "io/model_dir.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(HfConfig, TinyFixture) {
  Qwen3Config c = load_qwen3_config(test::data_path("models/tiny/config.json"));
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.head_dim, 32);  // from config, not hidden/heads (16)
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{151645});
}

TEST(HfConfig, DefaultsFollowTransformers) {
  Qwen3Config c = parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"num_attention_heads":8})", "t");
  EXPECT_EQ(c.num_key_value_heads, 8);  // absent -> num_attention_heads
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(HfConfig, RefusesOtherArchitectures) {
  EXPECT_NE(error_of([] {
              parse_qwen3_config(R"({"architectures":["LlamaForCausalLM"]})", "c.json");
            }).find("architecture 'LlamaForCausalLM' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_qwen3_config(R"({})", "c.json"); }).find("'(none)'"), std::string::npos);
}

// Hunt findings: each of these was refused although transformers loads it as
// the model qinfer runs.
TEST(HfConfig, WhatTransformersReadsAsAQwen3IsOne) {
  // A sentence-transformers save of Qwen3-Embedding names the backbone; a config without architectures has its
  // model_type, which transformers' Auto classes map.
  EXPECT_EQ(parse_qwen3_config(R"({"architectures":["Qwen3Model"]})", "c").num_experts, 0);
  EXPECT_EQ(parse_qwen3_config(R"({"model_type":"qwen3"})", "c").num_experts, 0);
  EXPECT_EQ(parse_qwen3_config(R"({"model_type":"qwen3_moe"})", "c").num_experts, 128);
  EXPECT_NE(error_of([] { parse_qwen3_config(R"({"model_type":"llama"})", "c"); }).find("'(none)'"), std::string::npos);
  // transformers 5's name for num_experts.
  EXPECT_EQ(parse_qwen3_config(R"({"architectures":["Qwen3MoeForCausalLM"],"num_local_experts":16})", "c").num_experts,
            16);
  // "swish" is SiLU in ACT2FN.
  EXPECT_NO_THROW(parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"hidden_act":"swish"})", "c"));
  EXPECT_NE(error_of([] {
              parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"hidden_act":"gelu"})", "c");
            }).find("hidden_act 'gelu' is not supported"),
            std::string::npos);
}

// use_sliding_window is refused only where a layer does slide, as
// transformers decides it (sliding_window, max_window_layers, layer_types),
// within the context.
TEST(HfConfig, ASlidingWindowIsRefusedOnlyWhereALayerSlides) {
  const std::string head =
      R"({"architectures":["Qwen3ForCausalLM"],"num_hidden_layers":4,"max_position_embeddings":40960,)";
  auto error = [&](const std::string& keys) { return error_of([&] { parse_qwen3_config(head + keys + "}", "c"); }); };
  for (const char* loads :
       {R"("use_sliding_window":false,"max_window_layers":0)", R"("use_sliding_window":true,"max_window_layers":4)",
        R"("use_sliding_window":true,"max_window_layers":28)",  // Qwen3's configs
        R"("use_sliding_window":true,"sliding_window":null,"max_window_layers":0)",
        R"("use_sliding_window":true,"sliding_window":40960,"max_window_layers":0)",
        R"("use_sliding_window":true,"max_window_layers":0,"layer_types":["full_attention"])"})
    EXPECT_EQ(error(loads), "") << loads;
  for (const char* slides :
       {R"("use_sliding_window":true,"max_window_layers":3)", R"("use_sliding_window":true,"max_window_layers":0)",
        R"("use_sliding_window":true,"max_window_layers":9,"layer_types":["full_attention","sliding_attention"])"})
    EXPECT_NE(error(slides).find("use_sliding_window=true with layers that slide"), std::string::npos) << slides;
  // A review finding: Qwen3MoeConfig has no max_window_layers nor layer_types; every layer of a mixture slides.
  const std::string moe =
      R"({"architectures":["Qwen3MoeForCausalLM"],"num_hidden_layers":4,"max_position_embeddings":40960,)";
  EXPECT_NE(error_of([&] {
              parse_qwen3_config(moe + R"("use_sliding_window":true,"max_window_layers":4})", "c");
            }).find("layers that slide"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { parse_qwen3_config(moe + R"("use_sliding_window":true,"sliding_window":null})", "c"); }),
            "");
}

TEST(HfConfig, ASequenceClassifierIsAQwen3Too) {
  EXPECT_FALSE(parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"]})", "c").sequence_classifier);
  EXPECT_TRUE(parse_qwen3_config(R"({"architectures":["Qwen3ForSequenceClassification"]})", "c").sequence_classifier);
}

// A classifier's label names, by index; a map that misses or repeats an index,
// or names one with something other than a string, is refused by name.
TEST(HfConfig, Id2labelNamesEachIndexOnce) {
  const std::string head = R"({"architectures":["Qwen3ForSequenceClassification"],"id2label":)";
  EXPECT_TRUE(parse_qwen3_config(head + "null}", "c").id2label.empty());
  EXPECT_EQ(parse_qwen3_config(head + R"({"1": "POSITIVE", "0": "NEGATIVE", "2": ""}})", "c").id2label,
            std::vector<std::string>({"NEGATIVE", "POSITIVE", ""}));
  for (const auto& [labels, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"0": "a", "2": "b"})", "keys must be the indexes 0 to 1 once each; got \"2\""},
           {R"({"0": "a", "00": "b"})", "once each; got \"00\""},
           {R"({"-1": "a"})", "got \"-1\""},
           {R"({"": "a"})", "got \"\""},
           {R"({"0x": "a"})", "got \"0x\""},
           {R"({"0": 1})", "id2label[\"0\"] must be a string"},
           {R"(["a"])", "id2label must be an object"}}) {
    const std::string config = head + labels + "}";  // a lambda cannot capture a structured binding in clang 14
    const std::string error = error_of([&] { parse_qwen3_config(config, "c.json"); });
    EXPECT_NE(error.find(message), std::string::npos) << labels << " -> " << error;
  }
}

// Qwen3-30B-A3B's config.json, as published (the keys that matter).
TEST(HfConfig, AMixtureOfExpertsReadsItsSparseMlp) {
  const Qwen3Config c = parse_qwen3_config(R"({"architectures":["Qwen3MoeForCausalLM"],"decoder_sparse_step":1,
      "head_dim":128,"hidden_size":2048,"intermediate_size":6144,"max_position_embeddings":40960,
      "mlp_only_layers":[],"model_type":"qwen3_moe","moe_intermediate_size":768,"norm_topk_prob":true,
      "num_attention_heads":32,"num_experts":128,"num_experts_per_tok":8,"num_hidden_layers":48,
      "num_key_value_heads":4,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":false})",
                                           "c");
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.head_dim, 128);
  for (int64_t l = 0; l < 48; ++l) EXPECT_TRUE(c.is_sparse_layer(l)) << l;
  EXPECT_FALSE(parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"]})", "c").is_sparse_layer(0));
}

// Qwen3MoeConfig's defaults are not Qwen3Config's: no head_dim (hidden / heads),
// 4 kv heads, norm_topk_prob false.
TEST(HfConfig, AMixtureOfExpertsTakesQwen3MoeConfigDefaults) {
  const Qwen3Config c = parse_qwen3_config(R"({"architectures":["Qwen3MoeForCausalLM"]})", "c");
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 6144);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_EQ(c.decoder_sparse_step, 1);
}

TEST(HfConfig, SparseLayersFollowTheStepAndTheDenseList) {
  const Qwen3Config c = parse_qwen3_config(
      R"({"architectures":["Qwen3MoeForCausalLM"],"decoder_sparse_step":2,"mlp_only_layers":[3,99]})", "c");
  const std::vector<bool> want = {false, true, false, false, false, true, false, true};
  for (int64_t l = 0; l < 8; ++l) EXPECT_EQ(c.is_sparse_layer(l), want[l]) << l;
  EXPECT_FALSE(
      parse_qwen3_config(R"({"architectures":["Qwen3MoeForCausalLM"],"num_experts":0})", "c").is_sparse_layer(0));
}

TEST(HfConfig, AMixtureOfExpertsWithImpossibleRoutingIsRefused) {
  auto moe_error = [](const std::string& keys) {
    return error_of([&] { parse_qwen3_config(R"({"architectures":["Qwen3MoeForCausalLM"],)" + keys + "}", "c.json"); });
  };
  EXPECT_NE(moe_error(R"("num_experts":4,"num_experts_per_tok":5)")
                .find("'num_experts_per_tok' = 5 must be between 1 and num_experts (4)"),
            std::string::npos);
  EXPECT_NE(moe_error(R"("num_experts_per_tok":0)").find("num_experts_per_tok"), std::string::npos);
  EXPECT_NE(moe_error(R"("num_experts":-1)").find("'num_experts' = -1 is out of range"), std::string::npos);
  EXPECT_NE(moe_error(R"("num_experts":1000000000)").find("out of range"), std::string::npos);
  EXPECT_NE(moe_error(R"("decoder_sparse_step":0)").find("'decoder_sparse_step' must be positive"), std::string::npos);
  EXPECT_NE(moe_error(R"("moe_intermediate_size":0)").find("'moe_intermediate_size' must be positive"),
            std::string::npos);
  EXPECT_NE(moe_error(R"("mlp_only_layers":[1,"2"])").find("'mlp_only_layers' must be a list of layer indices"),
            std::string::npos);
  EXPECT_NE(moe_error(R"("mlp_only_layers":3)").find("'mlp_only_layers' must be a list"), std::string::npos);
  EXPECT_NE(moe_error(R"("norm_topk_prob":"yes")").find("'norm_topk_prob' has the wrong type"), std::string::npos);
}

// What Qwen3's model card has users add to config.json for 131,072 positions.
TEST(HfConfig, YarnAsQwen3sCardAddsIt) {
  const Qwen3Config c = parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"max_position_embeddings":40960,
      "rope_theta":1000000,"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}})",
                                           "c");
  ASSERT_TRUE(c.yarn);
  EXPECT_DOUBLE_EQ(c.yarn->factor, 4.0);
  EXPECT_EQ(c.yarn->original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.yarn->beta_fast, 32);
  EXPECT_DOUBLE_EQ(c.yarn->beta_slow, 1);
  EXPECT_TRUE(c.yarn->truncate);
  EXPECT_DOUBLE_EQ(c.yarn->attention_factor, 0.1 * std::log(4.0) + 1);
  EXPECT_EQ(c.max_position_embeddings, 131072);  // 4 x 32,768, as vLLM derives max_model_len
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
}

TEST(HfConfig, YarnTakesTransformersDefaultsAndOlderKeys) {
  auto parse = [](const std::string& rope) {
    return parse_qwen3_config(
        R"({"architectures":["Qwen3ForCausalLM"],"max_position_embeddings":8192,"rope_scaling":)" + rope + "}", "c");
  };
  // The older "type" key; no factor: the ratio of the contexts.
  Qwen3Config c = parse(R"({"type":"yarn","original_max_position_embeddings":2048})");
  ASSERT_TRUE(c.yarn);
  EXPECT_DOUBLE_EQ(c.yarn->factor, 4.0);
  EXPECT_EQ(c.max_position_embeddings, 8192);
  // DeepSeek's two mscales give their ratio; an explicit attention_factor wins.
  c = parse(R"({"rope_type":"yarn","factor":40,"mscale":1.0,"mscale_all_dim":0.5})");
  EXPECT_DOUBLE_EQ(c.yarn->attention_factor, (0.1 * std::log(40.0) + 1) / (0.05 * std::log(40.0) + 1));
  EXPECT_EQ(c.max_position_embeddings, 40 * 8192);
  c = parse(R"({"rope_type":"yarn","factor":2,"attention_factor":1.5,"beta_fast":16,"beta_slow":2,"truncate":false})");
  EXPECT_DOUBLE_EQ(c.yarn->attention_factor, 1.5);
  EXPECT_DOUBLE_EQ(c.yarn->beta_fast, 16);
  EXPECT_DOUBLE_EQ(c.yarn->beta_slow, 2);
  EXPECT_FALSE(c.yarn->truncate);
  EXPECT_FALSE(parse(R"({"rope_type":"default"})").yarn);
  // Newer transformers saves rope_theta inside rope_parameters.
  c = parse_qwen3_config(
      R"({"architectures":["Qwen3ForCausalLM"],"rope_parameters":{"rope_theta":1000000.0,"rope_type":"default"}})",
      "c");
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_FALSE(c.yarn);
}

TEST(HfConfig, YarnOutOfRangeIsNamed) {
  auto rope_error = [](const std::string& rope) {
    return error_of(
        [&] { parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"rope_scaling":)" + rope + "}", "c.json"); });
  };
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":0.5})").find("c.json: rope_scaling: factor must be at least 1"),
            std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":"4"})").find("'factor' has the wrong type"), std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":4,"original_max_position_embeddings":0})")
                .find("original_max_position_embeddings must be positive"),
            std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":4,"beta_fast":-1})").find("beta_fast and beta_slow must be"),
            std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":4,"attention_factor":0})").find("attention_factor must be"),
            std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":1e9})").find("more than 2^31 - 1"), std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"yarn","factor":2,"rope_theta":1})").find("yarn needs rope_theta above 1"),
            std::string::npos);
  EXPECT_NE(rope_error(R"("yarn")").find("rope_scaling must be an object, not string"), std::string::npos);
  EXPECT_NE(rope_error(R"({"rope_type":"longrope"})").find("rope type 'longrope' is not supported"), std::string::npos);
}

TEST(HfConfig, RefusesBadValues) {
  EXPECT_NE(error_of([] {
              parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":"x"})", "c");
            }).find("field 'hidden_size' has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_qwen3_config(
                  R"({"architectures":["Qwen3ForCausalLM"],"num_attention_heads":6,"num_key_value_heads":4})", "c");
            }).find("not a multiple"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_qwen3_config(
                  R"({"architectures":["Qwen3ForCausalLM"],"rope_scaling":{"type":"linear","factor":2}})", "c");
            }).find("rope_scaling: rope type 'linear' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_qwen3_config("{", "c.json"); }).find("c.json is not valid JSON (line 1, column 2: "),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_qwen3_config(R"({"hidden_size": 1E999})", "c.json");
            }).find("c.json is not valid JSON (number overflow parsing '1E999')"),
            std::string::npos);
}

// A hunt finding: the message was nlohmann's own ("[json.exception.parse_error.101]
// parse error at ...; last read: '...'"), which echoed the bytes of the file raw.
TEST(HfConfig, TextThatIsNotJsonIsNamedPlainlyWithItsPosition) {
  const std::string text = "{\n  \"a\": 1,\n  \xff}";
  const std::string plain =
      " is not valid JSON (line 3, column 3: syntax error while parsing object key - invalid literal; expected string "
      "literal)";
  EXPECT_EQ(error_of([&] { parse_qwen3_config(text, "c.json"); }), "c.json" + plain);
  EXPECT_EQ(error_of([&] { parse_generation_config(text, "g.json"); }), "g.json" + plain);
}

// A hunt finding: rope_theta 1e-300 made the rotary frequencies infinite, every logit NaN, and the error blamed the
// weights ("the weights are corrupt").
TEST(HfConfig, RopeThetaThatMakesTheAnglesInfiniteIsRefused) {
  for (const char* theta : {"1e-300", "1e-36"}) {
    const std::string error = error_of([&] {
      parse_qwen3_config(std::string(R"({"architectures":["Qwen3ForCausalLM"],"rope_theta":)") + theta + "}", "c");
    });
    EXPECT_NE(error.find("makes the rotary angles infinite"), std::string::npos) << theta << ": " << error;
  }
  EXPECT_EQ(error_of([] { parse_qwen3_config(R"({"architectures":["Qwen3ForCausalLM"],"rope_theta":0.5})", "c"); }),
            "");
}

// A hunt finding: an eos id outside the vocabulary was accepted, and nothing stopped there.
TEST(HfConfig, EosIdsOutsideTheVocabularyAreRefused) {
  const std::string msg = error_of([] {
    parse_qwen3_config(R"({"architectures": ["Qwen3ForCausalLM"], "vocab_size": 100, "eos_token_id": [5, 100]})", "c");
  });
  EXPECT_NE(msg.find("c: field 'eos_token_id' holds token id 100, outside the model's vocabulary [0, 100)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(error_of([] {
              parse_qwen3_config(R"({"architectures": ["Qwen3ForCausalLM"], "vocab_size": 100, "eos_token_id": 99})",
                                 "c");
            }),
            "");
}

TEST(HfConfig, MissingConfigJson) {
  EXPECT_NE(error_of([] { load_qwen3_config("/nonexistent/config.json"); }).find("config.json not found"),
            std::string::npos);
}

TEST(GenerationConfig, EosListOrNumber) {
  GenerationConfig g = load_generation_config(test::data_path("models/tiny/generation_config.json"));
  EXPECT_EQ(g.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_FLOAT_EQ(*g.temperature, 0.6f);
  EXPECT_EQ(*g.top_k, 20);
  EXPECT_FLOAT_EQ(*g.top_p, 0.95f);
  GenerationConfig one = parse_generation_config(R"({"eos_token_id": 7})", "g");
  EXPECT_EQ(one.eos_token_ids, std::vector<int32_t>{7});
  EXPECT_FALSE(one.temperature.has_value());
  EXPECT_TRUE(load_generation_config("/nonexistent/generation_config.json").eos_token_ids.empty());
}

// Hunt findings: top_k 10^12 was truncated to an int and reported as
// -7.27e+08 by the sampler, with no file named; a negative one was "off" in
// batch and an error in generate. Values are checked where they are read.
TEST(GenerationConfig, ValuesOutOfRangeNameTheFileAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"top_k": 1000000000000})", "g: field 'top_k' = 1000000000000 is out of range"},
      {R"({"top_k": -1})", "g: field 'top_k' = -1 is out of range"},
      {R"({"temperature": -1})", "g: field 'temperature' = -1 is out of range"},
      {R"({"top_p": 0, "do_sample": true})", "g: field 'top_p' = 0 is out of range"},
      {R"({"top_p": 1.5})", "g: field 'top_p' = 1.5 is out of range"},
      {R"({"min_p": 2})", "g: field 'min_p' = 2 is out of range"},
      {R"({"repetition_penalty": 0})", "g: field 'repetition_penalty' = 0 is out of range"},
      // An audit finding: beyond float's range they became inf, and every request was refused as the client's.
      {R"({"repetition_penalty": 1e300})", "g: field 'repetition_penalty' = 1e+300 is out of range"},
      {R"({"temperature": 1e300})", "g: field 'temperature' = 1e+300 is out of range"},
  };
  for (const auto& c : cases) {
    const std::string error = error_of([&] { parse_generation_config(c.first, "g"); });
    EXPECT_NE(error.find(c.second), std::string::npos) << c.first << ": " << error;
  }
  EXPECT_EQ(*parse_generation_config(R"({"top_k": 0, "temperature": 0})", "g").top_k, 0);
  // A hunt finding: a greedy config's top_p 0 refused the load; transformers warns that it is unused.
  EXPECT_EQ(*parse_generation_config(R"({"top_p": 0.0, "do_sample": false})", "g").top_p, 0.0f);
  EXPECT_EQ(*parse_generation_config(R"({"top_p": 0})", "g").top_p, 0.0f);
}

// An audit finding: 2^59 + 4 heads of head_dim 32 made q_proj's 2^64 + 128
// rows wrap to 128, pass the shape checks, and crash the first forward pass.
TEST(HfConfig, SizesBeyondAnyModelAreRefused) {
  const std::string msg = error_of([] {
    parse_qwen3_config(R"({"architectures": ["Qwen3ForCausalLM"], "num_attention_heads": 576460752303423492,
                           "num_key_value_heads": 2, "head_dim": 32})",
                       "c");
  });
  EXPECT_NE(msg.find("c: field 'num_attention_heads' = 576460752303423492 is beyond any model's (at most 16777216)"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([] {
              parse_qwen3_config(R"({"architectures": ["Qwen3ForCausalLM"], "head_dim": 33554432})", "c");
            }).find("'head_dim' = 33554432 is beyond any model's"),
            std::string::npos);
}

// A hunt finding: num_hidden_layers 2^64 - 1 was reported as -1.
TEST(HfConfig, IntegersBeyondTheirTypeAreOutOfRange) {
  const std::string msg = error_of([] {
    parse_qwen3_config(R"({"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 18446744073709551615})", "c");
  });
  EXPECT_NE(msg.find("c: field 'num_hidden_layers' = 18446744073709551615 is out of range"), std::string::npos) << msg;
}

TEST(ModelDir, DirectoryIsTakenAsIs) {
  EXPECT_EQ(resolve_model_dir(test::data_path("models/tiny")), test::data_path("models/tiny"));
}

TEST(ModelDir, HubIdResolvedThroughRefsMain) {
  test::ScratchDir cache("hf");
  namespace fs = std::filesystem;
  const fs::path repo = fs::path(cache.path()) / "models--Qwen--Qwen3-0.6B";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "abc123");
  fs::create_directories(repo / "snapshots" / "old999");
  std::ofstream(repo / "refs" / "main") << "abc123\n";
  std::ofstream(repo / "snapshots" / "abc123" / "config.json") << "{}";
  std::ofstream(repo / "snapshots" / "old999" / "config.json") << "{}";
  setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  EXPECT_EQ(resolve_model_dir("Qwen/Qwen3-0.6B"), (repo / "snapshots" / "abc123").string());
  unsetenv("HF_HUB_CACHE");
}

TEST(ModelDir, NotFoundListsWhereItLooked) {
  test::ScratchDir home("home");
  setenv("HF_HOME", home.path().c_str(), 1);
  const std::string msg = error_of([] { resolve_model_dir("Qwen/Qwen3-Nonexistent"); });
  unsetenv("HF_HOME");
  EXPECT_NE(msg.find(home.path() + "/hub/models--Qwen--Qwen3-Nonexistent/snapshots"), std::string::npos) << msg;
  EXPECT_NE(msg.find("huggingface-cli download Qwen/Qwen3-Nonexistent"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { resolve_model_dir("no-such-dir"); }).find("neither a directory"), std::string::npos);
}
