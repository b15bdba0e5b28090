#include "runtime/embedding.h"

#include <gtest/gtest.h>

#include "util/error.h"

using namespace qinfer;

TEST(Embedding, VectorIsTheTruncatedStateOverItsNorm) {
  const std::vector<float> hidden = {3, 4, 12, 0};
  EXPECT_EQ(embedding_vector(hidden, 0, false), hidden);
  EXPECT_EQ(embedding_vector(hidden, 0, true), (std::vector<float>{3 / 13.0f, 4 / 13.0f, 12 / 13.0f, 0}));
  EXPECT_EQ(embedding_vector(hidden, 2, true), (std::vector<float>{3 / 5.0f, 4 / 5.0f}));
  EXPECT_EQ(embedding_vector(hidden, 2, false), (std::vector<float>{3, 4}));
  // A zero state stays zero (torch's F.normalize divides by max(norm, 1e-12)).
  EXPECT_EQ(embedding_vector(std::vector<float>{0, 0}, 0, true), (std::vector<float>{0, 0}));
  EXPECT_THROW(embedding_vector(hidden, 5, true), Error);
  EXPECT_THROW(embedding_vector(hidden, -1, true), Error);
}

TEST(Embedding, QueryIsQwen3EmbeddingsInstructionForm) {
  EXPECT_EQ(embedding_query("Given a web search query, retrieve relevant passages", "What is the capital of China?"),
            "Instruct: Given a web search query, retrieve relevant passages\nQuery:What is the capital of China?");
}
