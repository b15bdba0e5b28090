// Sampling defaults as transformers derives them from generation_config.json.
#include "runtime/model_bundle.h"

#include <gtest/gtest.h>

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
}
