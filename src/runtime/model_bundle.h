// Everything a frontend needs from a checkpoint directory: the model, its
// tokenizer and chat template when present, and generation_config defaults.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "io/hf_config.h"
#include "model/qwen3.h"
#include "runtime/sampler.h"
#include "text/grammar/token_trie.h"
#include "text/jinja/chat_template.h"
#include "text/tokenizer.h"

namespace qinfer {

struct ModelBundle {
  std::string dir;
  std::unique_ptr<Qwen3Model> model;
  std::optional<Tokenizer> tokenizer;         // when tokenizer.json exists
  std::optional<ChatTemplate> chat_template;  // when tokenizer_config.json has one that compiles
  // Why the template that is there cannot be used ("" = it can, or there is
  // none): only chatting needs it, so a broken one fails require_chat_template(),
  // not the load (transformers compiles it when it is applied).
  std::string chat_template_error;
  // Template variables every conversation gets unless it sets its own
  // (vLLM's --default-chat-template-kwargs), e.g. {"enable_thinking": false}.
  nlohmann::ordered_json default_chat_template_kwargs = nlohmann::ordered_json::object();
  // A smaller model of the same tokenizer for speculative decoding
  // (EngineOptions::draft_model), when one was loaded (load_draft_model).
  std::unique_ptr<Qwen3Model> draft_model;
  GenerationConfig generation;
  bool has_generation_config = false;  // generation_config.json exists
  double load_s = 0;

  const Tokenizer& require_tokenizer() const;  // Error naming the missing file
  const ChatTemplate& require_chat_template() const;
  // `source` (compiled now: Error naming `name`) as the chat template in
  // place of the checkpoint's.
  void replace_chat_template(const std::string& source, const std::string& name);
  // generation_config eos ids, else config.json's.
  std::vector<int32_t> eos_ids() const;
  // Sampling defaults from generation_config.json, a field it lacks taking
  // transformers' default (temperature 1, top_k 50, top_p 1); greedy without
  // do_sample (transformers' default, also when the file is missing).
  SamplingParams default_sampling() const;
  // The tokenizer's tokens as a trie, for grammars (built at the first call,
  // ~0.1 s; thread-safe). Error without a tokenizer.
  std::shared_ptr<const grammar::TokenTrie> token_trie() const;

 private:
  struct LazyTrie {
    std::once_flag once;
    std::shared_ptr<const grammar::TokenTrie> trie;
  };
  std::shared_ptr<LazyTrie> trie_ = std::make_shared<LazyTrie>();
};

// Resolves model_arg (directory or hub id in the HF cache) and loads it.
ModelBundle load_model_bundle(const std::string& model_arg, const LoadOptions& options = {});
// Loads model_arg as bundle's draft model. Error when its tokenizer is not
// bundle's (another id for some token: its drafts would mean other text).
void load_draft_model(ModelBundle& bundle, const std::string& model_arg, const LoadOptions& options);

}  // namespace qinfer
