// What reranking frontends (qinfer rerank, the server's /v1/rerank) make of a
// query and a document, and of the logits the engine gives for them, as
// Qwen3-Reranker's model card runs it through transformers: a chat prompt
// whose system turn asks for "yes" or "no", the user turn "<Instruct>: ...
// <Query>: ... <Document>: ...", and an assistant turn with an empty think
// block, each of the three parts tokenized on its own; the score is the
// probability of "yes" against "no" at the last position.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace qinfer {

// The model card's instruction when a request gives none.
inline constexpr std::string_view kDefaultRerankInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

class RerankPrompt {
 public:
  // Error when the tokenizer has no "yes" or "no" token.
  explicit RerankPrompt(const Tokenizer& tokenizer);

  std::vector<int32_t> input_ids(std::string_view instruction, std::string_view query, std::string_view document) const;
  // The ids whose logits score a pair: "no", then "yes".
  const std::vector<int32_t>& score_ids() const { return score_ids_; }
  // P("yes") from the logits of score_ids(), as the model card computes it in
  // float32: log_softmax over [no, yes], then exp.
  static float score(std::span<const float> no_yes_logits);

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> prefix_, suffix_, score_ids_;
};

}  // namespace qinfer
