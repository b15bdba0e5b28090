// One request's state as the scheduler and block manager see it: its token
// ids (prompt, then what has been generated), how many of them have their
// keys/values in the KV pool, and the blocks that hold them. Pure data.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qinfer::engine {

struct Sequence {
  enum class Status : uint8_t { Waiting, Running, Finished };

  int64_t id = 0;            // arrival order: lower is older
  std::vector<int32_t> ids;  // prompt, then generated tokens
  int64_t prompt_len = 0;
  int64_t computed = 0;  // ids [0, computed) have keys/values in `blocks`
  int64_t cached = 0;    // of them, taken from the prefix cache at admission
  // `cached` at its first admission (-1: not yet admitted), what its result
  // reports: a readmission after preemption finds its own blocks, no other
  // request's work (vLLM sets num_cached_tokens once, too).
  int64_t first_cached = -1;
  std::vector<int32_t> blocks;     // block table
  int64_t sealed = 0;              // leading blocks registered in the prefix cache
  uint64_t sealed_hash = 0;        // the prefix cache's chained hash over those blocks
  int32_t sealed_block = -1;       // the last of them, or the equal cached block the chain went on from (-1: none)
  uint64_t sealed_generation = 0;  // that block's generation then (its contents, if it is not held here)
  Status status = Status::Waiting;
  // The named LoRA adapter its rows take (BatchSeq::adapter; -1: none): its
  // keys and values are the adapter's, cached for its own kind only.
  int32_t adapter = -1;
  // vLLM's cache_salt (null: none): its blocks are cached for requests with
  // the same salt only, so one tenant's prompts cannot be probed by another's
  // timing of the prefix cache.
  std::shared_ptr<const std::string> cache_salt;
  // vLLM's priority: lower runs first (the scheduler's order is priority,
  // then arrival).
  int32_t priority = 0;
  // An embedding request: its last prompt position gives the final hidden
  // state instead of logits, and it ends there.
  bool wants_hidden = false;
  // Prompt log-probabilities: every prompt position's logits are wanted, so
  // none is taken from the prefix cache and each prompt chunk gives all its rows.
  bool wants_prompt_logits = false;
  // Speculative decoding: ids proposed to follow `ids` (a draft model's are
  // placeholders until the step is scheduled), run with its pending one as a
  // step allows (Scheduler), checked against what the model draws;
  // then how many of them it confirmed (now at the end of `ids`, their
  // keys/values computed), until complete() counts them.
  std::vector<int32_t> draft;
  int64_t accepted = 0;
  // Its next draft's length at most (-1: the engine's): the ids the last one
  // had confirmed plus one, or twice its length when all were. A rejected
  // draft id costs a row, as much as any other where a step is not
  // memory-bound (many sequences at once).
  int64_t draft_limit = -1;
  // Speculative decoding by a draft model (engine/draft_model.h): ids
  // [0, draft_computed) have keys/values in its pool, through `blocks`.
  int64_t draft_computed = 0;

  // Tokens whose keys/values are still to be computed (the prompt's rest, or
  // the last generated token).
  int64_t pending() const { return static_cast<int64_t>(ids.size()) - computed; }
};

}  // namespace qinfer::engine
