#include "runtime/embedding.h"

#include <cmath>

#include "util/error.h"

namespace qinfer {

std::vector<int32_t> embedding_input_ids(const Tokenizer& tokenizer, std::string_view text) {
  return tokenizer.with_special_tokens(tokenizer.encode(text));
}

std::string embedding_query(std::string_view task, std::string_view text) {
  std::string query = "Instruct: ";
  query.append(task).append("\nQuery:").append(text);
  return query;
}

std::vector<float> embedding_vector(std::span<const float> hidden, int64_t dimensions, bool normalize) {
  if (dimensions < 0 || dimensions > static_cast<int64_t>(hidden.size()))
    fail("dimensions must be between 1 and the model's ", hidden.size(), ", got ", dimensions);
  std::vector<float> v(hidden.begin(), dimensions > 0 ? hidden.begin() + dimensions : hidden.end());
  if (!normalize) return v;
  double squares = 0;
  for (float x : v) squares += static_cast<double>(x) * x;
  // torch's F.normalize: x / max(||x||, 1e-12).
  const auto norm = static_cast<float>(std::max(std::sqrt(squares), 1e-12));
  for (float& x : v) x /= norm;
  return v;
}

}  // namespace qinfer
