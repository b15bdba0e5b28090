// What reranking frontends (qinfer rerank, the server's /v1/rerank) make of a
// query and a document, and of the logits the engine gives for them, as
// Qwen3-Reranker's model card runs it through transformers: a chat prompt
// whose system turn asks for "yes" or "no", the user turn "<Instruct>: ...
// <Query>: ... <Document>: ...", and an assistant turn with an empty think
// block, each of the three parts tokenized on its own; the score is the
// probability of "yes" against "no" at the last position. A checkpoint
// converted to Qwen3ForSequenceClassification (score.weight: the "yes" row of
// the lm_head minus the "no" row, as vLLM and sentence-transformers load it)
// scores the same prompt with the sigmoid of its head's logit.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/qwen3.h"
#include "text/tokenizer.h"

namespace qinfer {

// The model card's instruction when a request gives none.
inline constexpr std::string_view kDefaultRerankInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

class RerankPrompt {
 public:
  // Error when the model has neither a one-label classifier head nor an
  // lm_head and a tokenizer with "yes" and "no" tokens.
  RerankPrompt(const Tokenizer& tokenizer, const Qwen3Model& model);

  std::vector<int32_t> input_ids(std::string_view instruction, std::string_view query, std::string_view document) const;
  // A pair the client formatted (the card's prefix in the first text, its
  // suffix in the second): each text's ids in turn, as HF's tokenizer(a, b)
  // gives them for Qwen3's tokenizer, which adds nothing around a pair.
  std::vector<int32_t> pair_ids(std::string_view first, std::string_view second) const;
  // True: a prompt is an embedding request (its final hidden state goes
  // through the classifier head); false: a scoring request for score_ids().
  bool uses_classifier() const { return score_ids_.empty(); }
  // The ids whose logits score a pair: "no", then "yes" (none with a classifier head).
  const std::vector<int32_t>& score_ids() const { return score_ids_; }
  // The relevance score of a prompt's Engine::output().
  float score(std::span<const float> output) const;
  // P("yes") from the logits of "no" and "yes", as the model card computes
  // it in float32: log_softmax over [no, yes], then exp.
  static float yes_probability(std::span<const float> no_yes_logits);

 private:
  const Tokenizer& tokenizer_;
  const Qwen3Model& model_;
  std::vector<int32_t> prefix_, suffix_, score_ids_;
};

}  // namespace qinfer
