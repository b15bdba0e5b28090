#include "runtime/rerank.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "util/error.h"

namespace qinfer {

namespace {

constexpr std::string_view kPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
constexpr std::string_view kSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

int32_t answer_id(const Tokenizer& tokenizer, std::string_view answer) {
  const std::optional<int32_t> id = tokenizer.token_to_id(answer);
  if (!id) fail("the tokenizer has no token \"", answer, "\": a reranker scores the pair by its \"yes\" and \"no\"");
  return *id;
}

}  // namespace

RerankPrompt::RerankPrompt(const Tokenizer& tokenizer, const Qwen3Model& model)
    : tokenizer_(tokenizer), model_(model), prefix_(tokenizer.encode(kPrefix)), suffix_(tokenizer.encode(kSuffix)) {
  if (model.has_classifier()) {
    if (model.layout().score_rows != 1)
      fail("this classifier has ", model.layout().score_rows, " labels; a reranker's has one (relevance)");
    return;
  }
  if (model.embeds_only())
    fail(
        "this is an embedding model (a backbone saved alone, as Qwen3-Embedding): a reranker (Qwen3-Reranker) "
        "scores pairs; the cosine of two embeddings is /score's answer on it");
  if (!model.has_lm_head()) fail("this model has neither an lm_head nor a classifier head: it cannot score a pair");
  score_ids_ = {answer_id(tokenizer, "no"), answer_id(tokenizer, "yes")};
}

float RerankPrompt::score(std::span<const float> output) const {
  if (!uses_classifier()) return yes_probability(output);
  const float logit = model_.classify(output)[0];
  return 1.0f / (1.0f + std::exp(-logit));  // torch.sigmoid, as vLLM and sentence-transformers apply it
}

std::vector<int32_t> RerankPrompt::input_ids(std::string_view instruction, std::string_view query,
                                             std::string_view document) const {
  if (query.starts_with(kPrefix)) return pair_ids(query, document);
  std::string pair = "<Instruct>: ";
  pair.append(instruction).append("\n<Query>: ").append(query).append("\n<Document>: ").append(document);
  std::vector<int32_t> ids = prefix_;
  const std::vector<int32_t> middle = tokenizer_.with_special_tokens(tokenizer_.encode(pair));
  ids.insert(ids.end(), middle.begin(), middle.end());
  ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::vector<int32_t> RerankPrompt::pair_ids(std::string_view first, std::string_view second) const {
  std::vector<int32_t> ids = tokenizer_.encode(first);
  const std::vector<int32_t> rest = tokenizer_.encode(second);
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

float RerankPrompt::yes_probability(std::span<const float> no_yes) {
  if (no_yes.size() != 2) fail("a rerank score needs the logits of \"no\" and \"yes\", got ", no_yes.size());
  const float no = no_yes[0], yes = no_yes[1], top = std::max(no, yes);
  const float log_sum = top + std::log(std::exp(no - top) + std::exp(yes - top));
  return std::exp(yes - log_sum);
}

}  // namespace qinfer
