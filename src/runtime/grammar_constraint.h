// Constrained decoding: a request's output follows a grammar (JSON mode, a
// JSON Schema). Before each draw, the tokens the grammar does not allow next
// get a logit of -infinity, as vLLM applies its grammar bitmask before the
// sampling chain; the rest of the sampler is unchanged, so a constrained
// request is as deterministic and batch-invariant as any other. A reply that
// opens with a <think> block (Qwen3's reasoning) is free until </think>, as
// vLLM's structured outputs with a reasoning parser: the grammar applies to
// the answer (and eos waits for it: a reply that ends while it reasons would
// say "stop" with no document). The line break Qwen3 writes after </think>
// ("\n\n") is allowed before the answer: a grammar that forbade it would push
// the model off its course where the answer begins.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "text/grammar/matcher.h"
#include "text/grammar/token_trie.h"
#include "text/tokenizer.h"

namespace qinfer {

// What a request asks its output to follow; shared by its sequences.
struct OutputGrammar {
  std::shared_ptr<const grammar::Grammar> grammar;
  const Tokenizer* tokenizer = nullptr;                  // each token's bytes; outlives the requests
  std::shared_ptr<const grammar::TokenTrie> vocabulary;  // token_trie(*tokenizer)
  int32_t think_open = -1, think_close = -1;             // <think> / </think> ids; -1: no reasoning block
  bool starts_in_reasoning = false;                      // the prompt leaves a <think> block open
  std::vector<int32_t> separators;  // "\n\n" and "\n" where each is one token: one may follow </think>
  std::string source;               // what asked for it (a request field, a flag), named where it fails
};

// Where a reply's <think> block is. None: the output is all answer (raw
// completions: nothing splits a block off, so none may open); MayOpen: one
// may open first (chat, whose reasoning parser splits it off); Open: the
// prompt left one open.
enum class ReasoningBlock { None, MayOpen, Open };

// `grammar` over `tokenizer`'s tokens (`vocabulary`: token_trie(tokenizer)),
// with its <think> / </think> ids where a block may be (and it has them).
std::shared_ptr<const OutputGrammar> output_grammar(std::shared_ptr<const grammar::Grammar> grammar,
                                                    const Tokenizer& tokenizer,
                                                    std::shared_ptr<const grammar::TokenTrie> vocabulary,
                                                    ReasoningBlock reasoning, std::string source);

// The trie of a tokenizer's tokens as the grammar sees them (special tokens
// left out: they are never part of the text a grammar describes).
std::shared_ptr<const grammar::TokenTrie> token_trie(const Tokenizer& tokenizer);

class GrammarConstraint : public TokenFilter {
 public:
  // `eos_ids` may end the output once the grammar is satisfied (none when the
  // request ignores eos).
  GrammarConstraint(std::shared_ptr<const OutputGrammar> spec, std::vector<int32_t> eos_ids);

  bool allows(int32_t id) override;
  void mask(std::span<float> logits) override;
  // Takes the sampled token; Error if the grammar refuses it (a bug: the
  // mask allowed it).
  void accept(int32_t id);
  // The grammar is satisfied and allows nothing more, and no eos may end the
  // output: the caller ends it.
  bool complete() const;

 private:
  // Start: the first token, which may open a <think> block; Separator: the
  // first after </think>, which may be a line break; Answer: the grammar's
  // part (after the reasoning, if any).
  enum class Phase { Start, Reasoning, Separator, Answer };
  bool is_separator(int32_t id) const;
  bool is_eos(int32_t id) const;
  const std::vector<uint64_t>& answer_mask();

  std::shared_ptr<const OutputGrammar> spec_;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> eos_ids_;
  grammar::Matcher matcher_;
  Phase phase_;
  // Masks of recent states: within a JSON string every token leaves the same
  // state, and its mask is the costly one (the whole vocabulary walked).
  std::list<std::pair<grammar::MatchState, std::vector<uint64_t>>> cache_;
};

}  // namespace qinfer
