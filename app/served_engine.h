// The model on the batching engine's own thread, as the HTTP API serves it:
// what `serve` and `run-batch` (the same API over a file of requests) load.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "chat_template_flags.h"
#include "engine/engine_loop.h"
#include "engine_flags.h"
#include "runtime/model_bundle.h"
#include "server/openai_request.h"
#include "util/thread_pool.h"

namespace qinfer::cli {

struct ServedEngine {
  std::unique_ptr<ModelBundle> bundle;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<engine::EngineLoop> loop;
  std::unique_ptr<server::ServedModel> served;
};

// Loads `model` (served as `served_name`, with the chat template flags
// read) with a context of `ctx` positions (0: the model's) and an engine
// loop holding `max_waiting` requests beyond --parallel. Error when the
// tokenizer is missing or --ctx is over the model's.
ServedEngine load_served_engine(const std::string& model, const std::string& served_name,
                                const LoadOptions& load_options, const EngineFlags& engine, const DraftFlags& draft,
                                const ChatTemplateFlags& chat_template, int64_t ctx, int64_t max_waiting);

// The notes `serve` and `run-batch` print once loaded: a chat template that
// cannot be used, a KV pool that holds less than the context asked for.
void print_served_notes(const char* command, const ServedEngine& e, int64_t ctx);

}  // namespace qinfer::cli
