#include "runtime/model_bundle.h"

#include "runtime/grammar_constraint.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "io/model_dir.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/timer.h"

namespace qinfer {

namespace {

// A tokenizer_config.json without "chat_template" is a model that cannot chat;
// one that is not a JSON object may hold one for all we know: loading it says
// what is wrong with the file (it was "has no chat_template").
bool may_hold_chat_template(const std::string& tokenizer_config) {
  const auto config = nlohmann::json::parse(tokenizer_config, nullptr, false);
  return !config.is_object() || config.contains("chat_template");
}

}  // namespace

ModelBundle load_model_bundle(const std::string& model_arg, const LoadOptions& options) {
  Timer t;
  ModelBundle b;
  b.dir = resolve_model_dir(model_arg);
  b.model = Qwen3Model::load(b.dir, options);
  if (const std::vector<std::string>& unused = b.model->unused_tensors(); !unused.empty()) {
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(unused.size(), 3); ++i) names += (i ? ", " : "") + unused[i];
    std::fprintf(stderr,
                 "qinfer: warning: %s: %zu tensors of the checkpoint are not used (%s%s): as Qwen3 or Qwen3-MoE "
                 "reads it, the model may compute something else than the checkpoint's architecture\n",
                 b.dir.c_str(), unused.size(), names.c_str(), unused.size() > 3 ? ", ..." : "");
  }
  b.has_generation_config = file_exists(b.dir + "/generation_config.json");
  b.generation = load_generation_config(b.dir + "/generation_config.json");
  require_in_vocabulary(b.generation.eos_token_ids, b.model->config().vocab_size, "eos_token_id",
                        b.dir + "/generation_config.json");
  if (file_exists(b.dir + "/tokenizer.json")) b.tokenizer = Tokenizer::from_file(b.dir + "/tokenizer.json");
  // An id without an embedding row would fail every request that holds it, each as the client's mistake.
  if (b.tokenizer && static_cast<int64_t>(b.tokenizer->vocab_size()) > b.model->config().vocab_size)
    fail(b.dir, "/tokenizer.json has token id ", b.tokenizer->vocab_size() - 1, ", beyond config.json's vocab_size ",
         b.model->config().vocab_size, ": the tokenizer of another model");
  const std::string tc = b.dir + "/tokenizer_config.json";
  if (file_exists(b.dir + "/chat_template.jinja") || (file_exists(tc) && may_hold_chat_template(read_text_file(tc)))) {
    try {
      b.chat_template = ChatTemplate::from_model_dir(b.dir);
    } catch (const Error& e) {
      b.chat_template_error = e.what();
    }
  }
  b.load_s = t.seconds();
  return b;
}

void load_draft_model(ModelBundle& bundle, const std::string& model_arg, const LoadOptions& options) {
  ModelBundle draft = load_model_bundle(model_arg, options);
  if (bundle.tokenizer.has_value() != draft.tokenizer.has_value())
    fail(bundle.tokenizer ? draft.dir : bundle.dir,
         "/tokenizer.json not found: the draft model's tokenizer must be checked against the model's");
  if (bundle.tokenizer && draft.tokenizer) {
    const Tokenizer &a = *bundle.tokenizer, &b = *draft.tokenizer;
    if (a.vocab_size() != b.vocab_size())
      fail("the draft model ", draft.dir, " has a tokenizer of ", b.vocab_size(), " ids, the model's has ",
           a.vocab_size(), ": a draft model must share the model's tokenizer");
    for (size_t id = 0; id < a.vocab_size(); ++id) {
      const int32_t i = static_cast<int32_t>(id);
      if (a.names_token(i) != b.names_token(i) || a.token_bytes(i) != b.token_bytes(i) ||
          a.is_special(i) != b.is_special(i))
        fail("the draft model ", draft.dir, " has another tokenizer than the model's (id ", id,
             " differs): a draft model must share the model's tokenizer");
    }
  }
  bundle.draft_model = std::move(draft.model);
}

std::shared_ptr<const grammar::TokenTrie> ModelBundle::token_trie() const {
  const Tokenizer& tokenizer = require_tokenizer();
  std::call_once(trie_->once, [&] { trie_->trie = qinfer::token_trie(tokenizer); });
  return trie_->trie;
}

const Tokenizer& ModelBundle::require_tokenizer() const {
  if (!tokenizer) fail(dir, "/tokenizer.json not found: text prompts need the tokenizer (use --prompt-ids without it)");
  return *tokenizer;
}

void ModelBundle::replace_chat_template(const std::string& source, const std::string& name) {
  chat_template = ChatTemplate::replacing(dir, source, name);
  chat_template_error.clear();
}

const ChatTemplate& ModelBundle::require_chat_template() const {
  if (!chat_template_error.empty()) fail("the model's chat template cannot be used: ", chat_template_error);
  if (!chat_template) fail(dir, "/tokenizer_config.json has no chat_template: this model cannot be chatted with");
  return *chat_template;
}

std::vector<int32_t> ModelBundle::eos_ids() const {
  return generation.eos_token_ids.empty() ? model->config().eos_token_ids : generation.eos_token_ids;
}

SamplingParams ModelBundle::default_sampling() const {
  SamplingParams p;
  const GenerationConfig& g = generation;
  p.temperature = g.do_sample.value_or(false) ? g.temperature.value_or(1.0f) : 0.0f;
  p.top_k = g.top_k.value_or(50);  // transformers' GenerationConfig default, as it samples a config without top_k
  p.top_p = g.top_p.value_or(1.0f) > 0.0f ? g.top_p.value_or(1.0f) : 1.0f;  // 0: a greedy config's, unused there
  p.min_p = g.min_p.value_or(0.0f);
  p.repetition_penalty = g.repetition_penalty.value_or(1.0f);
  return p;
}

}  // namespace qinfer
