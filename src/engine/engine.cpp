#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>

#include "util/error.h"

namespace qinfer::engine {

namespace {

bool is_eos(const GenerationOptions& o, int32_t token) {
  return !o.ignore_eos && std::find(o.eos_ids.begin(), o.eos_ids.end(), token) != o.eos_ids.end();
}

// An eos or a stop id: the output ends with it.
bool ends_output(const GenerationOptions& o, int32_t token) {
  return is_eos(o, token) || std::find(o.stop_ids.begin(), o.stop_ids.end(), token) != o.stop_ids.end();
}

// allowed_token_ids, bad_words and min_tokens before the sampler, as vLLM's
// logits processors apply them (`output`: the ids out so far). Per request,
// so as batch-invariant as the rest.
void mask_by_request(const GenerationOptions& o, std::span<const int32_t> output, std::vector<float>& logits) {
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  if (!o.allowed_ids.empty()) {
    std::vector<float> kept(o.allowed_ids.size());
    for (size_t k = 0; k < kept.size(); ++k) kept[k] = logits[static_cast<size_t>(o.allowed_ids[k])];
    std::fill(logits.begin(), logits.end(), kNever);
    for (size_t k = 0; k < kept.size(); ++k) logits[static_cast<size_t>(o.allowed_ids[k])] = kept[k];
  }
  for (const std::vector<int32_t>& word : o.bad_words)
    if (word.size() <= output.size() + 1 && std::equal(word.begin(), word.end() - 1, output.end() - (word.size() - 1)))
      logits[static_cast<size_t>(word.back())] = kNever;
  if (static_cast<int64_t>(output.size()) < o.min_tokens) {
    if (!o.ignore_eos)
      for (int32_t id : o.eos_ids) logits[static_cast<size_t>(id)] = kNever;
    for (int32_t id : o.stop_ids) logits[static_cast<size_t>(id)] = kNever;
  }
}

int64_t context_length(const Qwen3Model& model, const EngineOptions& o) {
  const int64_t model_max = model.config().max_position_embeddings;
  if (o.context < 0) fail("the context length must be positive (or 0: the model's ", model_max, ")");
  return o.context > 0 ? std::min(o.context, model_max) : model_max;
}

int32_t pool_blocks(const Qwen3Model& model, const EngineOptions& o) {
  if (o.block_size < 1) fail("the KV block size must be at least 1 position, got ", o.block_size);
  if (o.kv_blocks > kMaxPoolBlocks)
    fail("a KV pool of ", o.kv_blocks, " blocks is more than the ", kMaxPoolBlocks, " one engine manages");
  if (o.kv_blocks > 0) return o.kv_blocks;
  const int64_t context = context_length(model, o);
  const int64_t per_seq = context / o.block_size + (context % o.block_size != 0);
  const int64_t seqs = std::min(o.max_running, kMaxPoolBlocks);  // no overflow below
  int64_t blocks = kMaxPoolBlocks / per_seq < seqs ? kMaxPoolBlocks : per_seq * seqs;
  if (o.kv_memory_limit > 0) {
    const int64_t fit = o.kv_memory_limit / engine_block_bytes(model, o);
    if (fit < 1)
      fail("the memory for the KV cache (", o.kv_memory_limit >> 20, " MiB) holds no block of ", o.block_size,
           " positions (", engine_block_bytes(model, o) >> 20, " MiB)");
    blocks = std::min(blocks, fit);
  }
  return static_cast<int32_t>(blocks);
}

}  // namespace

// A sequence must fit the pool alone: preemption frees room for the first
// running one, never more than the whole pool.
int64_t sequence_context(const Qwen3Model& model, const EngineOptions& o) {
  return std::min(context_length(model, o), static_cast<int64_t>(pool_blocks(model, o)) * o.block_size);
}

int64_t kv_block_bytes(const Qwen3Model& model, int32_t block_size) {
  const auto& c = model.config();
  const double bytes = 2.0 * static_cast<double>(c.num_hidden_layers) * static_cast<double>(c.num_key_value_heads) *
                       static_cast<double>(c.head_dim) * block_size *
                       static_cast<double>(dtype_size(model.kv_cache_dtype()));
  if (!(bytes < 0x1p62)) fail("a KV block of ", block_size, " positions is larger than the address space");
  return static_cast<int64_t>(bytes);
}

int64_t engine_block_bytes(const Qwen3Model& model, const EngineOptions& o) {
  return kv_block_bytes(model, o.block_size) + (o.draft_model ? kv_block_bytes(*o.draft_model, o.block_size) : 0);
}

namespace {

// A draft model's ids must mean the model's, at every position a sequence may reach.
void check_draft_model(const Qwen3Model& model, const EngineOptions& o, int64_t context) {
  if (!o.draft_model) return;
  const Qwen3Config &c = model.config(), &d = o.draft_model->config();
  if (d.vocab_size != c.vocab_size)
    fail("the draft model's vocabulary has ", d.vocab_size, " ids, the model's ", c.vocab_size,
         ": a draft model must share the model's tokenizer");
  if (!o.draft_model->has_lm_head())
    fail("the draft model has no lm_head (a backbone saved alone, such as an embedding model): it cannot draft");
  if (d.max_position_embeddings < context)
    fail("the draft model's context is ", d.max_position_embeddings, " positions, less than the ", context,
         " a sequence may reach: give a context of at most ", d.max_position_embeddings);
  if (o.draft_tokens < 1) fail("a draft model needs at least 1 draft token a step, got ", o.draft_tokens);
  if (!(o.draft_p_min >= 0 && o.draft_p_min <= 1))
    fail("the draft model's least probability of a draft id must be between 0 and 1, got ", o.draft_p_min);
}

}  // namespace

Engine::Engine(const Qwen3Model& model, ThreadPool& pool, const EngineOptions& options)
    : model_(model),
      options_(options),
      draft_{options.draft_tokens, options.draft_min_ngram, options.draft_max_ngram},
      context_(sequence_context(model, options)),
      kv_(model.config().num_hidden_layers, model.config().num_key_value_heads, model.config().head_dim,
          pool_blocks(model, options), options.block_size, model.kv_cache_dtype()),
      blocks_(pool_blocks(model, options), options.block_size),
      scheduler_(blocks_, options.max_batch_tokens, options.max_running),
      runner_(model, kv_, pool),
      pool_(pool),
      scratch_(static_cast<size_t>(pool.size())) {
  validate(draft_);
  check_draft_model(model, options, context_);
  if (options.draft_model)
    draft_model_ = std::make_unique<DraftModel>(*options.draft_model, blocks_, options.draft_p_min, pool);
}

Engine::Request& Engine::queue(std::span<const int32_t> prompt, int64_t max_prompt, const PromptOnlyOptions& options) {
  if (prompt.empty()) fail("the prompt is empty: at least one token is needed");
  const int32_t adapter = model_.current_adapter(options.adapter);
  model_.check_adapter(adapter);
  if (static_cast<int64_t>(prompt.size()) > max_prompt)
    fail("the prompt has ", prompt.size(), " tokens but the context length is ", context_, " tokens",
         max_prompt < context_ ? ": nothing can be generated" : "");
  for (int32_t t : prompt)
    if (t < 0 || t >= model_.config().vocab_size)
      fail("token id ", t, " is outside the vocabulary [0, ", model_.config().vocab_size, ")");
  auto r = std::make_unique<Request>();
  const int64_t handle = next_id_++;
  r->seq.id = handle;
  r->seq.ids.assign(prompt.begin(), prompt.end());
  r->seq.prompt_len = static_cast<int64_t>(prompt.size());
  r->seq.adapter = adapter;
  if (!options.cache_salt.empty()) r->seq.cache_salt = std::make_shared<const std::string>(options.cache_salt);
  r->seq.priority = options.priority;
  r->result.prompt_tokens = r->seq.prompt_len;
  Request& queued = *r;
  by_seq_[&r->seq] = r.get();
  requests_[handle] = std::move(r);
  return queued;
}

int64_t Engine::add(std::span<const int32_t> prompt, const GenerationOptions& options, OnEngineToken on_token,
                    OnPromptLogprobs on_prompt_logprobs) {
  if (!model_.has_lm_head())
    fail(
        "this model has no lm_head.weight (a backbone saved alone, such as an embedding model): it embeds, it "
        "cannot generate");
  std::vector<const std::vector<int32_t>*> id_lists = {&options.stop_ids, &options.allowed_ids};
  for (const std::vector<int32_t>& word : options.bad_words) {
    if (word.empty()) fail("a bad word of no token ids");
    id_lists.push_back(&word);
  }
  for (const auto* ids : id_lists)
    for (int32_t t : *ids)
      if (t < 0 || t >= model_.config().vocab_size)
        fail("token id ", t, " (a stop, allowed or bad word id) is outside the vocabulary [0, ",
             model_.config().vocab_size, ")");
  if (options.thinking.tokens >= 0 &&
      (options.thinking.close_id < 0 || options.thinking.close_id >= model_.config().vocab_size))
    fail("a thinking budget needs the id of the token that ends the reasoning (</think>), got ",
         options.thinking.close_id);
  if (options.prediction)  // its ids become draft rows
    for (int32_t t : options.prediction->ids())
      if (t < 0 || t >= model_.config().vocab_size)
        fail("the prediction's token id ", t, " is outside the vocabulary [0, ", model_.config().vocab_size, ")");
  Request& r = queue(prompt, context_ - 1, prompt_only_options(options));
  r.options = options;
  if (options.thinking.tokens >= 0) r.thinking.emplace(options.thinking);
  if (options.prediction)
    r.prediction = std::make_unique<PredictionDraft>(
        options.prediction, draft_.max_tokens > 0 ? draft_.max_tokens : kPredictionDraftTokens);
  r.on_token = std::move(on_token);
  r.on_prompt_logprobs = std::move(on_prompt_logprobs);
  r.seq.wants_prompt_logits = options.prompt_logprobs >= 0 && prompt.size() > 1;
  r.sampler = std::make_unique<Sampler>(options.sampling, static_cast<size_t>(model_.config().vocab_size));
  if (options.grammar)
    r.constraint = std::make_unique<GrammarConstraint>(options.grammar,
                                                       options.ignore_eos ? std::vector<int32_t>{} : options.eos_ids);
  scheduler_.add(&r.seq);
  return r.seq.id;
}

int64_t Engine::add_embedding(std::span<const int32_t> prompt, const PromptOnlyOptions& options) {
  Request& r = queue(prompt, context_, options);
  r.seq.wants_hidden = true;
  r.options.max_new_tokens = 0;
  scheduler_.add(&r.seq);
  return r.seq.id;
}

int64_t Engine::add_scoring(std::span<const int32_t> prompt, std::vector<int32_t> token_ids,
                            const PromptOnlyOptions& options) {
  if (!model_.has_lm_head())
    fail("this model has no lm_head.weight (a backbone saved alone, such as an embedding model): it has no logits");
  if (token_ids.empty()) fail("a scoring request needs the token ids to score");
  for (int32_t t : token_ids)
    if (t < 0 || t >= model_.config().vocab_size)
      fail("token id ", t, " to score is outside the vocabulary [0, ", model_.config().vocab_size, ")");
  Request& r = queue(prompt, context_, options);
  r.score_ids = std::move(token_ids);
  r.options.max_new_tokens = 0;
  scheduler_.add(&r.seq);
  return r.seq.id;
}

std::span<const float> Engine::output(int64_t handle) const {
  auto it = requests_.find(handle);
  if (it == requests_.end()) fail("engine: no request ", handle);
  return it->second->output;
}

Engine::Request& Engine::request(int64_t handle) {
  auto it = requests_.find(handle);
  if (it == requests_.end()) fail("engine: no request ", handle);
  return *it->second;
}

void Engine::cancel(int64_t handle) {
  Request& r = request(handle);
  if (r.seq.status == Sequence::Status::Finished) return;
  scheduler_.cancel(&r.seq);
  r.result.reason = StopReason::Callback;
}

bool Engine::finished(int64_t handle) const {
  auto it = requests_.find(handle);
  return it != requests_.end() && it->second->seq.status == Sequence::Status::Finished;
}

const GenerationResult& Engine::result(int64_t handle) const {
  auto it = requests_.find(handle);
  if (it == requests_.end()) fail("engine: no request ", handle);
  return it->second->result;
}

std::span<const float> Engine::prompt_logits(int64_t handle) const {
  auto it = requests_.find(handle);
  if (it == requests_.end()) fail("engine: no request ", handle);
  return it->second->prompt_logits;
}

void Engine::erase(int64_t handle) {
  auto it = requests_.find(handle);
  if (it == requests_.end()) return;
  if (it->second->seq.status != Sequence::Status::Finished) cancel(handle);
  by_seq_.erase(&it->second->seq);
  requests_.erase(it);
}

bool Engine::step() {
  if (scheduler_.idle()) return false;
  Step step = scheduler_.schedule();
  if (step.seqs.empty()) fail("engine: the scheduler found nothing to run although requests wait");
  if (draft_model_) draft_by_model(step);
  last_step_ = {step.tokens(), static_cast<int64_t>(step.seqs.size()), 0};
  for (const ScheduledSeq& s : step.seqs)
    last_step_.prompt_tokens += std::clamp<int64_t>(s.seq->prompt_len - s.seq->computed, 0, s.tokens);
  runner_.run(step);
  postprocess(step);
  scheduler_.complete(step);
  propose_drafts(step);
  return true;
}

void Engine::propose_drafts(const Step& step) {
  for (const ScheduledSeq& s : step.seqs) {
    Sequence& seq = *s.seq;
    const int64_t len = static_cast<int64_t>(seq.ids.size());
    Request& r = *by_seq_.at(&seq);
    r.draft_source = Request::DraftSource::Lookup;  // a preempted one's rest ends with it
    if (seq.status != Sequence::Status::Running || len <= seq.prompt_len) continue;  // not decoding
    if (draft_.max_tokens == 0 && !r.prediction) continue;
    // A step gives at most its draft and one more token: within max_new_tokens and the context
    // (the options of the draft's source cap it too).
    const int64_t room =
        std::min({r.options.max_new_tokens - static_cast<int64_t>(r.result.ids.size()) - 1, context_ - len - 1,
                  seq.draft_limit < 0 ? std::numeric_limits<int64_t>::max() : seq.draft_limit});
    if (r.prediction) {
      const std::span<const int32_t> output = std::span(seq.ids).subspan(static_cast<size_t>(seq.prompt_len));
      if (r.prediction->propose(output, room, seq.draft)) {
        r.draft_source = Request::DraftSource::Prediction;
        continue;
      }
      if (draft_.max_tokens == 0) continue;
    }
    if (!draft_model_) {
      ngram_draft(seq.ids, draft_, room, seq.draft);
    } else if (r.draft_rest > 0) {
      --r.draft_rest;
      r.draft_source = Request::DraftSource::Resting;
    } else if (room > 0 && len - seq.draft_computed <= draft_.max_tokens + 1 + kMaxDraftRest) {
      // Its ids are placeholders until the step is scheduled (draft_by_model);
      // a sequence the draft model lags far behind (a prompt from the prefix
      // cache) drafts once it caught up.
      seq.draft.assign(static_cast<size_t>(std::min<int64_t>(room, draft_.max_tokens)), seq.ids.back());
      r.draft_source = Request::DraftSource::Model;
    }
  }
}

void Engine::draft_by_model(Step& step) {
  draft_jobs_.clear();
  draft_job_seqs_.clear();
  for (size_t i = 0; i < step.seqs.size(); ++i) {
    const ScheduledSeq& s = step.seqs[i];
    Sequence& seq = *s.seq;
    const Request& r = *by_seq_.at(&seq);
    if (seq.wants_hidden || !r.score_ids.empty() || r.options.max_new_tokens <= 0) continue;  // generates nothing
    if (r.draft_source == Request::DraftSource::Resting) continue;
    const bool drafting = s.drafted > 0 && r.draft_source == Request::DraftSource::Model;
    draft_jobs_.push_back({&seq, seq.computed + s.pending(), drafting ? s.drafted : 0});
    draft_job_seqs_.push_back(i);
  }
  draft_model_->run(draft_jobs_, options_.max_batch_tokens);
  draft_stats_.model_rows = draft_model_->rows();
  draft_stats_.model_passes = draft_model_->passes();
  for (size_t k = 0; k < draft_jobs_.size(); ++k) {
    ScheduledSeq& s = step.seqs[draft_job_seqs_[k]];
    Request& r = *by_seq_.at(s.seq);
    if (s.drafted == 0 || r.draft_source != Request::DraftSource::Model) continue;
    if (draft_jobs_[k].drafts == 0) {
      r.draft_rest = r.next_draft_rest;
      r.next_draft_rest = std::min(2 * r.next_draft_rest, kMaxDraftRest);
    } else {
      r.next_draft_rest = 1;
    }
    s.tokens -= s.drafted - draft_jobs_[k].drafts;
    s.drafted = draft_jobs_[k].drafts;
  }
}

Engine::Draw Engine::draw(const Step& step, size_t i, DrawScratch& scratch) {
  Draw d;
  try {  // nothing may leave a pool thread
    const Sequence& seq = *step.seqs[i].seq;
    Request& r = *by_seq_.at(&seq);
    const int64_t rows = runner_.logit_rows(i);
    if (rows == 0) return d;
    if (!r.score_ids.empty()) return d;   // nothing to sample: postprocess keeps its logits
    if (r.options.max_new_tokens <= 0) {  // the prompt alone was asked for (its log-probabilities)
      d.ended = true;
      d.reason = StopReason::MaxTokens;
      return d;
    }
    std::span<const int32_t> history = seq.ids;
    for (int64_t row = 0; row < rows; ++row) {  // a row j > 0 follows draft id j - 1, confirmed
      const std::span<const float> logits = runner_.logits(i, row);
      const size_t drawn = d.tokens.size();
      d.error = nan_logits_error(logits, r.result.ids.size() + drawn + 1, static_cast<int64_t>(history.size()));
      if (!d.error.empty()) {
        d.ended = true;
        return d;
      }
      if (r.constraint && r.constraint->complete()) {  // the grammar is done and no eos may say so
        d.ended = true;
        d.reason = StopReason::Eos;
        return d;
      }
      scratch.logits.assign(logits.begin(), logits.end());
      mask_by_request(r.options, history.subspan(static_cast<size_t>(seq.prompt_len)), scratch.logits);
      if (const int32_t forced = r.thinking ? r.thinking->forced() : -1; forced >= 0) {
        const float kept = scratch.logits[static_cast<size_t>(forced)];
        std::fill(scratch.logits.begin(), scratch.logits.end(), -std::numeric_limits<float>::infinity());
        scratch.logits[static_cast<size_t>(forced)] = std::isfinite(kept) ? kept : 0.0f;  // forced, whatever it was
      }
      // Masks of the request's own that leave nothing fail it alone, its fault (a
      // grammar's do in the sampler, below). Bans alone leave some id unless
      // there are as many as ids: no pass over the vocabulary for them.
      if (!r.options.allowed_ids.empty() || r.options.bad_words.size() >= scratch.logits.size()) {
        const auto open = [](float x) { return x > -std::numeric_limits<float>::infinity(); };
        if (std::none_of(scratch.logits.begin(), scratch.logits.end(), open)) {
          d.ended = true;
          d.refused = true;
          d.error = "nothing can be drawn at output token " + std::to_string(r.result.ids.size() + drawn + 1) +
                    ": the request's allowed_token_ids, bad_words and min_tokens leave no token";
          return d;
        }
      }
      int32_t token;
      try {  // a grammar that cannot go on fails its request, not the batch
        token = r.sampler->sample(scratch.logits, history, static_cast<size_t>(seq.prompt_len), r.constraint.get());
        if (r.constraint) r.constraint->accept(token);
        if (r.thinking) r.thinking->accept(token);
      } catch (const Error& e) {
        d.ended = true;
        d.error = e.what();
        d.refused = r.constraint != nullptr;
        return d;
      }
      d.tokens.push_back(token);
      if (r.options.logprobs >= 0) d.logprobs.push_back(token_logprobs(logits, token, r.options.logprobs));
      if (row + 1 == rows || token != seq.draft[static_cast<size_t>(row)] || ends_output(r.options, token)) break;
      if (drawn == 0) scratch.history.assign(seq.ids.begin(), seq.ids.end());
      scratch.history.push_back(token);
      history = scratch.history;
    }
  } catch (...) {
    d.unexpected = std::current_exception();
  }
  return d;
}

bool Engine::emit(Request& r, int32_t token, TokenLogprobs* logprobs) {
  Sequence& seq = r.seq;
  r.result.ids.push_back(token);
  if (logprobs) r.result.logprobs.push_back(std::move(*logprobs));
  const bool keep_going = r.on_token ? r.on_token(token, logprobs ? &r.result.logprobs.back() : nullptr) : true;
  bool done = true;
  if (ends_output(r.options, token))
    r.result.reason = StopReason::Eos;
  else if (!keep_going)
    r.result.reason = StopReason::Callback;
  else if (static_cast<int64_t>(r.result.ids.size()) >= r.options.max_new_tokens)
    r.result.reason = StopReason::MaxTokens;
  else if (static_cast<int64_t>(seq.ids.size()) + 1 >= context_)  // prompt + completion: at most the context
    r.result.reason = StopReason::ContextFull;
  else
    done = false;
  if (done)
    seq.status = Sequence::Status::Finished;
  else
    seq.ids.push_back(token);  // its keys/values are computed in the next step (a draft's: in this one)
  return !done;
}

// Samples every sequence whose step reached its end, with the stop rules of
// Session::generate; a finished sequence leaves at complete(). The draws run
// on the pool's threads (a grammar's mask inside a JSON string takes ms); the
// bookkeeping and callbacks after them, in order, on this one.
void Engine::postprocess(const Step& step) {
  const size_t n = step.seqs.size();
  draws_.assign(n, Draw{});
  if (n == 1) {  // one request decoding: no other thread to wake
    draws_[0] = draw(step, 0, scratch_[0]);
  } else {
    std::atomic<size_t> next_seq{0};
    pool_.run([&](int t) {
      for (size_t i; (i = next_seq++) < n;) draws_[i] = draw(step, i, scratch_[static_cast<size_t>(t)]);
    });
  }
  prompt_logprobs(step);
  for (size_t i = 0; i < n; ++i) {
    Draw& d = draws_[i];
    if (d.unexpected) std::rethrow_exception(d.unexpected);
    Sequence& seq = *step.seqs[i].seq;
    Request& r = *by_seq_.at(&seq);
    if (const std::span<const float> hidden = runner_.hidden(i); !hidden.empty())
      finish_prompt_only(r, {hidden.begin(), hidden.end()}, "the hidden state");
    if (const std::span<const float> logits = runner_.logits(i); !r.score_ids.empty() && !logits.empty()) {
      std::vector<float> scores;
      for (int32_t t : r.score_ids) scores.push_back(logits[static_cast<size_t>(t)]);
      finish_prompt_only(r, std::move(scores), "the logits");
    }
    if (seq.wants_prompt_logits) {
      for (TokenLogprobs& l : d.prompt_logprobs) r.result.prompt_logprobs.push_back(std::move(l));
      if (seq.computed + step.seqs[i].pending() == seq.prompt_len) {  // its prompt is done
        seq.wants_prompt_logits = false;
        if (r.on_prompt_logprobs) r.on_prompt_logprobs(r.result.prompt_logprobs);
      }
    }
    if (d.tokens.empty() && !d.ended) continue;
    if (r.result.ids.empty()) {
      r.result.reused_tokens = seq.first_cached;
      r.result.prefill_s = r.since_add.seconds();
      if (r.options.keep_prompt_logits) {
        const std::span<const float> logits = runner_.logits(i);
        r.prompt_logits.assign(logits.begin(), logits.end());
      }
    } else {
      r.result.decode_s = r.since_add.seconds() - r.result.prefill_s;
    }
    if (step.seqs[i].drafted > 0) {
      const size_t drafted = seq.draft.size();
      int64_t confirmed = 0;
      while (static_cast<size_t>(confirmed) < std::min(d.tokens.size(), drafted) &&
             d.tokens[static_cast<size_t>(confirmed)] == seq.draft[static_cast<size_t>(confirmed)])
        ++confirmed;
      ++draft_stats_.drafts;
      draft_stats_.drafted += step.seqs[i].drafted;
      seq.accepted = confirmed;
      seq.draft_limit = confirmed == step.seqs[i].drafted ? 2 * confirmed : confirmed + 1;
    }
    bool going = true;
    size_t emitted = 0;
    for (; emitted < d.tokens.size() && going; ++emitted)
      going = emit(r, d.tokens[emitted], r.options.logprobs >= 0 ? &d.logprobs[emitted] : nullptr);
    // Accepted: the confirmed ids the answer kept (a hunt finding: those after a stop string counted, 8 of 8 for
    // an answer of 7 tokens).
    if (step.seqs[i].drafted > 0) draft_stats_.accepted += std::min<int64_t>(seq.accepted, emitted);
    if (r.prediction) {  // ids after what ended it (its callback) are not in it
      const bool drafted = step.seqs[i].drafted > 0 && r.draft_source == Request::DraftSource::Prediction;
      const int64_t confirmed = drafted ? std::min<int64_t>(seq.accepted, static_cast<int64_t>(emitted)) : 0;
      for (size_t t = 0; t < emitted; ++t) r.result.from_prediction.push_back(static_cast<int64_t>(t) < confirmed);
      if (drafted) r.prediction->confirm(step.seqs[i].drafted, confirmed);
      r.result.rejected_prediction_tokens = r.prediction->rejected();
    }
    if (going && d.ended) {
      r.result.error = std::move(d.error);
      r.result.refused = d.refused;
      r.result.reason = d.reason;
      seq.status = Sequence::Status::Finished;
    }
  }
}

// Row j of a sequence's step is position computed + j, whose logits predict
// its next prompt id; those recorded before a preemption are not recorded
// again. A row's log-softmax over the vocabulary takes about as long as its
// lm_head product: the rows of all sequences are spread over the threads.
void Engine::prompt_logprobs(const Step& step) {
  struct Row {
    size_t seq, slot;  // its draw's prompt_logprobs[slot]
    int64_t position;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < step.seqs.size(); ++i) {
    const Sequence& seq = *step.seqs[i].seq;
    if (!seq.wants_prompt_logits) continue;
    const int64_t first = std::max(seq.computed, static_cast<int64_t>(by_seq_.at(&seq)->result.prompt_logprobs.size()));
    const int64_t end = std::min(seq.computed + step.seqs[i].pending(), seq.prompt_len - 1);
    for (int64_t p = first; p < end; ++p) rows.push_back({i, static_cast<size_t>(p - first), p});
    draws_[i].prompt_logprobs.resize(static_cast<size_t>(std::max<int64_t>(end - first, 0)));
  }
  if (rows.empty()) return;  // no thread woken for nothing (a decode step)
  std::atomic<size_t> next{0};
  pool_.run([&](int) {
    for (size_t k; (k = next++) < rows.size();) {
      const Row& x = rows[k];
      const Sequence& seq = *step.seqs[x.seq].seq;
      draws_[x.seq].prompt_logprobs[x.slot] =
          token_logprobs(runner_.chunk_logits(x.seq, x.position - seq.computed),
                         seq.ids[static_cast<size_t>(x.position + 1)], by_seq_.at(&seq)->options.prompt_logprobs);
    }
  });
}

void Engine::finish_prompt_only(Request& r, std::vector<float> values, const char* what) {
  r.result.reused_tokens = r.seq.first_cached;
  r.result.prefill_s = r.since_add.seconds();
  r.seq.status = Sequence::Status::Finished;
  // Corrupt weights (or an overflow) give NaN or infinity: nothing to return.
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) {
      r.result.reason = StopReason::Error;
      r.result.error = std::string(what) + " of the last position (" + std::to_string(r.seq.prompt_len - 1) +
                       ") holds NaN or infinity at " + std::to_string(i);
      return;
    }
  r.output = std::move(values);
}

}  // namespace qinfer::engine
