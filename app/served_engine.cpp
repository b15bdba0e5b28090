#include "served_engine.h"

#include <algorithm>
#include <cstdio>

#include "util/error.h"

namespace qinfer::cli {

ServedEngine load_served_engine(const std::string& model, const std::string& served_name,
                                const LoadOptions& load_options, const EngineFlags& engine, const DraftFlags& draft,
                                const ChatTemplateFlags& chat_template, int64_t ctx, int64_t max_waiting) {
  ServedEngine e;
  e.bundle = std::make_unique<ModelBundle>(load_model_bundle(model, load_options));
  chat_template.apply(*e.bundle);
  e.bundle->require_tokenizer();
  draft.load_model(*e.bundle, load_options);
  if (const int64_t model_max = e.bundle->model->config().max_position_embeddings; ctx > model_max)
    fail("--ctx ", ctx, " is more than the model's context of ", model_max, " tokens (max_position_embeddings)");
  e.pool = std::make_unique<ThreadPool>(load_options.threads);
  engine::EngineLoopOptions lo;
  lo.engine = engine.engine_options(*e.bundle->model, ctx, e.bundle->draft_model.get());
  draft.apply(lo.engine, *e.bundle);
  lo.max_waiting = max_waiting;
  e.loop = std::make_unique<engine::EngineLoop>(*e.bundle->model, *e.pool, lo);
  e.served = std::make_unique<server::ServedModel>(
      server::ServedModel{*e.bundle, served_name.empty() ? model : served_name, e.loop->context()});
  return e;
}

void print_served_notes(const char* command, const ServedEngine& e, int64_t ctx) {
  if (!e.bundle->chat_template_error.empty())
    std::fprintf(stderr,
                 "qinfer %s: note: the chat template cannot be used (%s): /v1/chat/completions and /v1/responses "
                 "answer 400\n",
                 command, e.bundle->chat_template_error.c_str());
  const int64_t model_max = e.bundle->model->config().max_position_embeddings;
  if (const int64_t wanted = ctx > 0 ? std::min(ctx, model_max) : model_max; e.served->context < wanted)
    std::fprintf(stderr, "qinfer %s: note: the KV pool holds %lld positions, so that is the context, not %lld\n",
                 command, static_cast<long long>(e.served->context), static_cast<long long>(wanted));
}

}  // namespace qinfer::cli
