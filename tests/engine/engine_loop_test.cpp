// The engine thread fed from many threads: every stream's ids equal the
// request's solo run, cancellation and a full queue behave, and drain()
// leaves the pool all free.
#include "engine/engine_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "model/test_model.h"
#include "test_util.h"
#include "util/error.h"

using namespace qinfer;
using namespace qinfer::engine;
using namespace std::chrono_literals;

namespace {

GenerationOptions options(int64_t max_tokens, float temperature, uint64_t seed) {
  GenerationOptions o;
  o.max_new_tokens = max_tokens;
  o.ignore_eos = true;
  o.sampling.temperature = temperature;
  o.sampling.top_k = 40;
  o.sampling.seed = seed;
  return o;
}

// Waits for the stream to end; its tokens in order.
std::vector<int32_t> drain_stream(RequestStream& s, RequestStream::State* state = nullptr) {
  std::vector<int32_t> ids;
  RequestStream::State st;
  while ((st = s.wait(ids, 100ms)) == RequestStream::State::Running) {
  }
  if (state) *state = st;
  return ids;
}

}  // namespace

TEST(EngineLoop, ConcurrentSubmittersGetTheirSoloIds) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(2);
  constexpr int kThreads = 8;
  std::vector<std::vector<int32_t>> prompts(kThreads);
  std::vector<GenerationOptions> opts;
  std::vector<std::vector<int32_t>> solo;
  for (int i = 0; i < kThreads; ++i) {
    for (int t = 0; t < 2 + 3 * i; ++t) prompts[i].push_back((t * 7919 + 977 * i + 13) % 151000);
    opts.push_back(options(5 + i, i % 2 ? 0.8f : 0.0f, 7 + static_cast<uint64_t>(i)));
    Session s(*model, pool);
    solo.push_back(s.generate(prompts[i], opts[i], {}).ids);
  }
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 64});
  std::vector<std::vector<int32_t>> got(kThreads);
  std::vector<GenerationResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      auto s = loop.submit(prompts[i], opts[i]);
      ASSERT_NE(s, nullptr);
      RequestStream::State st;
      got[i] = drain_stream(*s, &st);
      ASSERT_EQ(st, RequestStream::State::Finished);
      results[i] = s->result();
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(got[i], solo[i]) << "request " << i;
    EXPECT_EQ(results[i].ids, solo[i]) << "request " << i;
    EXPECT_EQ(results[i].reason, StopReason::MaxTokens);
  }
  const auto stats = loop.stats();
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.kv_blocks_used, 0);
}

TEST(EngineLoop, RefusedPromptFailsItsStreamWithTheReason) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4, 32}, 8});
  auto s = loop.submit(std::vector<int32_t>(40, 11), options(4, 0, 0));
  ASSERT_NE(s, nullptr);
  RequestStream::State st;
  EXPECT_TRUE(drain_stream(*s, &st).empty());
  EXPECT_EQ(st, RequestStream::State::Failed);
  EXPECT_NE(s->error().find("context length is 32"), std::string::npos) << s->error();
  EXPECT_EQ(s->failure(), RequestStream::Failure::Refused) << "the request's fault, not the engine's";
}

// A re-hunt finding: a request with n > 1 submits its further choices once
// the first has started; a drain begun in between refused them, and the
// request in flight got "busy" (503) instead of its answer.
TEST(EngineLoop, ADrainTakesFurtherChoicesOfARequestInFlight) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 8});
  std::optional<EngineLoop::Reservation> room = loop.reserve(2);
  ASSERT_TRUE(room);
  auto first = loop.submit({785, 6722, 315}, options(300, 0, 0), &*room);
  std::vector<int32_t> ids;
  while (ids.empty()) ASSERT_EQ(first->wait(ids, 1s), RequestStream::State::Running);
  std::thread drain([&] { loop.drain(std::chrono::steady_clock::now() + 30s); });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(loop.submit({1, 2}, options(3, 0, 0)), nullptr);  // a new request: refused
  EXPECT_FALSE(loop.reserve(1));
  auto second = loop.submit({785, 6722, 315}, options(5, 0, 0), &*room);
  ASSERT_NE(second, nullptr);
  for (auto* s : {first.get(), second.get()}) {
    RequestStream::State st;
    drain_stream(*s, &st);
    EXPECT_EQ(st, RequestStream::State::Finished);
    EXPECT_EQ(s->result().reason, StopReason::MaxTokens);
  }
  drain.join();
}

// A hunt's note: a drain returned once the engine was idle, though a request
// in flight whose first choice had ended still held places for its others
// (submitted then into a stopping server: errors for a graceful shutdown).
// It waits for them, or for the reservation to go.
TEST(EngineLoop, ADrainWaitsForThePlacesARequestInFlightReserved) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  for (const bool submitted : {true, false}) {
    EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 8});  // a drained loop takes no new reservation
    std::optional<EngineLoop::Reservation> room = loop.reserve(2);
    ASSERT_TRUE(room);
    auto first = loop.submit({785, 6722, 315}, options(2, 0, 0), &*room);
    RequestStream::State st;
    drain_stream(*first, &st);
    ASSERT_EQ(st, RequestStream::State::Finished);
    std::atomic<bool> drained = false;
    std::thread drain([&] {
      loop.drain(std::chrono::steady_clock::now() + 30s);
      drained = true;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(drained) << "a place is still reserved";
    if (submitted) {
      auto second = loop.submit({785, 6722, 315}, options(2, 0, 0), &*room);
      ASSERT_NE(second, nullptr);
      drain_stream(*second, &st);
      EXPECT_EQ(st, RequestStream::State::Finished);
    } else {
      room.reset();  // the request gave up its other choices (its client left)
    }
    drain.join();
    EXPECT_TRUE(drained);
  }
}

// A hunt finding: an n > 1 request submitted its first choice, waited for
// it to start, then found no room for the second (503 after a second): the
// first had held a place all along, and a request that would have fit was
// refused meanwhile. A reservation takes room for all of a request's
// choices at once, or none.
TEST(EngineLoop, AReservationTakesRoomForAllOfARequestOrNone) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 2}, 1});  // 2 running + 1 waiting
  ASSERT_EQ(loop.capacity(), 3);
  auto long_one = loop.submit({785, 6722, 315}, options(100000, 0, 0));
  ASSERT_NE(long_one, nullptr);
  std::vector<int32_t> ids;
  while (ids.empty()) ASSERT_EQ(long_one->wait(ids, 1s), RequestStream::State::Running);
  EXPECT_FALSE(loop.reserve(3));  // 2 places left
  {
    std::optional<EngineLoop::Reservation> two = loop.reserve(2);
    ASSERT_TRUE(two);
    EXPECT_EQ(loop.submit({1, 2}, options(3, 0, 0)), nullptr) << "the reserved places are taken";
    EXPECT_FALSE(loop.reserve(1));
    auto first = loop.submit({1, 2}, options(3, 0, 0), &*two);
    ASSERT_NE(first, nullptr);
    drain_stream(*first);
  }  // the place it did not use goes back
  auto other = loop.submit({1, 2}, options(3, 0, 0));
  ASSERT_NE(other, nullptr);
  drain_stream(*other);
  long_one->cancel();
}

TEST(EngineLoop, CancelStopsAtTheNextStepAndFreesBlocks) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 8});
  auto s = loop.submit({785, 6722, 315}, options(100000, 0, 0));
  std::vector<int32_t> ids;
  while (ids.size() < 3) ASSERT_EQ(s->wait(ids, 1s), RequestStream::State::Running);
  s->cancel();
  // A re-hunt finding: a request its consumer had ended (a stop string seen)
  // and a drain then cut failed as cut short (503), though it was whole.
  loop.drain(std::chrono::steady_clock::now());
  RequestStream::State st;
  drain_stream(*s, &st);
  ASSERT_EQ(st, RequestStream::State::Finished);
  EXPECT_EQ(s->result().reason, StopReason::Callback);
  EXPECT_LT(s->result().ids.size(), 1000u);
  EXPECT_EQ(loop.stats().kv_blocks_used, 0);
}

TEST(EngineLoop, FullQueueRefusesAndDrainCancelsWhatIsLeft) {
  auto model = Qwen3Model::load(test::data_path("models/tiny"));
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 1}, 2});  // one running, two waiting at most
  auto first = loop.submit({785, 6722}, options(100000, 0, 0));
  std::vector<int32_t> ids;
  while (ids.empty()) ASSERT_EQ(first->wait(ids, 1s), RequestStream::State::Running);
  auto second = loop.submit({1, 2}, options(3, 0, 0));
  auto third = loop.submit({3, 4}, options(3, 0, 0));
  ASSERT_NE(second, nullptr);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(loop.submit({5, 6}, options(3, 0, 0)), nullptr);
  loop.drain(std::chrono::steady_clock::now() + 50ms);
  // A hunt finding: they ended as finished answers (finish_reason "abort"),
  // which clients took for whole ones; cut short, they fail as the server's.
  for (auto* s : {first.get(), second.get(), third.get()}) {
    RequestStream::State st;
    drain_stream(*s, &st);
    EXPECT_EQ(st, RequestStream::State::Failed);
    EXPECT_EQ(s->failure(), RequestStream::Failure::ShutDown);
  }
  EXPECT_EQ(loop.submit({5, 6}, options(3, 0, 0)), nullptr);  // refuses after drain
  EXPECT_EQ(loop.stats().kv_blocks_used, 0);
  EXPECT_EQ(loop.stats().running, 0);
}

// The stats name the adapters in use (the server's lora_requests_info): those
// of the running requests, and of the waiting ones (queued or not yet taken
// in); a request without one adds none.
TEST(EngineLoop, StatsNameTheAdaptersOfRunningAndWaitingRequests) {
  const std::string tiny = test::data_path("models/tiny");
  test::ScratchDir dir("loop-lora");
  for (const char* name : {"a", "b", "c"})
    write_test_lora_adapter(dir.file(name), load_qwen3_config(tiny + "/config.json"), {}, 5);
  LoadOptions named;
  named.lora_modules = {{"a", dir.file("a")}, {"b", dir.file("b")}, {"c", dir.file("c")}};
  auto model = Qwen3Model::load(tiny, named);
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 1}, 8});  // one running at a time
  GenerationOptions long_run = options(100000, 0, 0);
  long_run.adapter = 2;
  auto first = loop.submit({785, 6722}, long_run);
  // Running once a step's stats say so (its first token streams out before they are published).
  for (int i = 0; i < 500 && loop.stats().running == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(loop.stats().running, 1);
  std::vector<std::shared_ptr<RequestStream>> queued;
  for (int32_t adapter : {0, -1, 2, 0}) {
    GenerationOptions o = options(3, 0, 0);
    o.adapter = adapter;
    queued.push_back(loop.submit({1, 2}, o));
    ASSERT_NE(queued.back(), nullptr);
  }
  const EngineLoop::Stats s = loop.stats();
  EXPECT_EQ(s.running, 1);
  EXPECT_EQ(s.waiting, 4);
  EXPECT_EQ(s.running_adapters, std::vector<int32_t>({2}));
  EXPECT_EQ(s.waiting_adapters, std::vector<int32_t>({0, 2}));
  first->cancel();
  for (auto& q : queued) drain_stream(*q);
  drain_stream(*first);
  for (int i = 0; i < 100 && loop.stats().running > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(loop.stats().running_adapters.empty());
  EXPECT_TRUE(loop.stats().waiting_adapters.empty());
}

// Adapters loaded and unloaded while requests come (the server's runtime
// LoRA updates): every request either runs with the adapter it resolved,
// giving that adapter's ids, or, arriving after its adapter was dropped, is
// refused naming it; none runs without it.
TEST(EngineLoop, AdaptersComingAndGoingNeverChangeARequestsIds) {
  const std::string tiny = test::data_path("models/tiny");
  test::ScratchDir dir("loop-lora-churn");
  write_test_lora_adapter(dir.file("a"), load_qwen3_config(tiny + "/config.json"), {}, 7);
  const std::vector<int32_t> prompt = {785, 6722, 315};
  const GenerationOptions greedy = options(6, 0, 0);
  auto solo_ids = [&](const LoadOptions& load) {
    auto m = Qwen3Model::load(tiny, load);
    ThreadPool p(1);
    EngineLoop l(*m, p, {{4, 0, 16, 4}, 8});
    return drain_stream(*l.submit(prompt, greedy));
  };
  LoadOptions with_a;
  with_a.lora_adapters = {dir.file("a")};
  const std::vector<int32_t> base_ids = solo_ids({}), a_ids = solo_ids(with_a);
  ASSERT_NE(base_ids, a_ids) << "the adapter changes the ids";

  auto model = Qwen3Model::load(tiny);
  ThreadPool pool(2);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 32});
  std::atomic<bool> churning{true};
  std::atomic<int> submitted_with_adapter{0};
  std::thread churn([&] {
    for (int round = 0; round < 16; ++round) {
      loop.between_steps([&] { model->add_adapter("a", model->read_adapter(dir.file("a"))); }).get();
      // Loaded until a request took it (however slow the build), then a little longer.
      const int before = submitted_with_adapter;
      for (int i = 0; i < 5000 && submitted_with_adapter == before; ++i) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(round % 4 * 5));
      const std::optional<int32_t> index = model->unlist_adapter("a");
      if (!index) {
        ADD_FAILURE() << "the adapter just added is not listed";
        break;
      }
      loop.between_steps([&, i = *index] { model->drop_adapter(i); }, *index);  // not waited for, as the server
    }
    churning = false;
  });
  std::atomic<int> with_adapter{0}, refused{0}, mismatches{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c)
    clients.emplace_back([&, c] {
      for (int k = 0; churning || k < 4; ++k) {
        GenerationOptions o = greedy;
        o.adapter = (k + c) % 3 == 0 ? -1 : model->find_adapter("a").value_or(-2);
        auto stream = o.adapter == -2 ? nullptr : loop.submit(prompt, o);
        if (!stream) {  // not loaded now, or the queue is full
          std::this_thread::sleep_for(1ms);
          continue;
        }
        if (o.adapter >= 0) ++submitted_with_adapter;
        RequestStream::State st{};
        const std::vector<int32_t> ids = drain_stream(*stream, &st);
        if (st == RequestStream::State::Finished) {
          if (ids != (o.adapter < 0 ? base_ids : a_ids)) ++mismatches;
          if (o.adapter >= 0) ++with_adapter;
        } else if (o.adapter >= 0 && stream->failure() == RequestStream::Failure::Refused &&
                   stream->error().find("LoRA adapter 'a' was unloaded") != std::string::npos) {
          ++refused;
        } else {
          ++mismatches;
        }
      }
    });
  churn.join();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(with_adapter, 0);
  // Every adapter added was dropped once its requests were done: nothing is left in the layers.
  loop.between_steps([] {}).get();
  for (const Qwen3Layer& layer : model->weights().layers) EXPECT_TRUE(layer.lora.q_proj.empty());
  std::printf("[churn] %d requests ran with the adapter, %d were refused after it went\n", with_adapter.load(),
              refused.load());
}

namespace {

// tiny with a random adapter written to dir/name and loaded under that name (--lora-modules): index 0.
std::unique_ptr<Qwen3Model> tiny_with_named_adapter(const test::ScratchDir& dir, const std::string& name,
                                                    uint64_t seed) {
  const std::string tiny = test::data_path("models/tiny");
  write_test_lora_adapter(dir.file(name), load_qwen3_config(tiny + "/config.json"), {}, seed);
  LoadOptions named;
  named.lora_modules = {{name, dir.file(name)}};
  return Qwen3Model::load(tiny, named);
}

}  // namespace

// A task between steps (how a served model's adapters come and go) runs at
// the next step boundary; one that waits for an adapter to be unused runs
// only once no request holds it, and a request that comes after it dropped
// the adapter is refused by name. What a task throws reaches its caller.
TEST(EngineLoop, TasksBetweenStepsWaitForTheirAdapterToBeUnused) {
  test::ScratchDir dir("loop-tasks");
  auto model = tiny_with_named_adapter(dir, "a", 5);
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 1}, 8});
  GenerationOptions long_run = options(100000, 0, 0);
  long_run.adapter = 0;
  auto first = loop.submit({785, 6722}, long_run);
  for (int i = 0; i < 500 && loop.stats().running == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(loop.stats().running, 1);

  bool ran = false;
  auto at_once = loop.between_steps([&] { ran = true; });
  ASSERT_EQ(at_once.wait_for(10s), std::future_status::ready);
  at_once.get();
  EXPECT_TRUE(ran);
  auto drop = loop.between_steps([&] { model->drop_adapter(0); }, 0);
  EXPECT_EQ(drop.wait_for(300ms), std::future_status::timeout) << "it ran while a request used the adapter";
  first->cancel();
  drain_stream(*first);
  ASSERT_EQ(drop.wait_for(10s), std::future_status::ready);
  drop.get();
  auto late = loop.submit({1, 2}, long_run);
  RequestStream::State st{};
  drain_stream(*late, &st);
  EXPECT_EQ(st, RequestStream::State::Failed);
  EXPECT_EQ(late->failure(), RequestStream::Failure::Refused);
  EXPECT_NE(late->error().find("LoRA adapter 'a' was unloaded"), std::string::npos) << late->error();
  auto failing = loop.between_steps([] { throw qinfer::Error("no such adapter"); });
  EXPECT_THROW(failing.get(), qinfer::Error);
}

// A review finding: with load_inplace, a request that read the name before the
// replacement and came in after the replaced adapter was dropped was refused
// ("was unloaded") though the name was served all along. It runs with the
// name's adapter now; a plain unload still refuses it.
TEST(EngineLoop, ARequestForAnAdapterReplacedInPlaceRunsWithTheReplacement) {
  test::ScratchDir dir("loop-replaced-adapter");
  auto model = tiny_with_named_adapter(dir, "x", 5);
  write_test_lora_adapter(dir.file("b"), model->config(), {}, 6);
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 8});
  GenerationOptions with_x = options(4, 0, 0);
  with_x.adapter = *model->find_adapter("x");  // resolved by the request before the replacement
  std::optional<int32_t> replaced;
  loop.between_steps([&] { model->add_adapter("x", model->read_adapter(dir.file("b")), &replaced); }).get();
  ASSERT_EQ(replaced, with_x.adapter);
  loop.between_steps([&] { model->drop_adapter(*replaced); }, *replaced).get();
  GenerationOptions with_b = with_x;
  with_b.adapter = *model->find_adapter("x");
  ASSERT_NE(with_b.adapter, with_x.adapter);
  RequestStream::State st{};
  const std::vector<int32_t> got = drain_stream(*loop.submit({785, 6722, 315}, with_x), &st);
  EXPECT_EQ(st, RequestStream::State::Finished);
  EXPECT_EQ(got, drain_stream(*loop.submit({785, 6722, 315}, with_b)));
  // Unloaded without a replacement: refused by name.
  ASSERT_TRUE(model->unlist_adapter("x"));
  loop.between_steps([&, b = with_b.adapter] { model->drop_adapter(b); }, with_b.adapter).get();
  auto late = loop.submit({785, 6722, 315}, with_x);
  drain_stream(*late, &st);
  EXPECT_EQ(st, RequestStream::State::Failed);
  EXPECT_NE(late->error().find("LoRA adapter 'x' was unloaded"), std::string::npos) << late->error();
}

// A hunt finding: an n > 1 request submits its further choices once its first
// has started; an unload whose adapter the first alone held ran when it ended,
// and the others were refused ("was unloaded", a 400 for a request accepted
// before the unload). Its reservation holds the adapter too.
TEST(EngineLoop, AnUnloadWaitsForThePlacesReservedForItsAdaptersRequests) {
  test::ScratchDir dir("loop-reserved-adapter");
  auto model = tiny_with_named_adapter(dir, "a", 5);
  ThreadPool pool(1);
  EngineLoop loop(*model, pool, {{4, 0, 16, 4}, 8});
  GenerationOptions with_a = options(3, 0, 0);
  with_a.adapter = 0;
  std::optional<EngineLoop::Reservation> room = loop.reserve(2, 0);
  ASSERT_TRUE(room);
  const std::vector<int32_t> first_ids = drain_stream(*loop.submit({785, 6722, 315}, with_a, &*room));
  ASSERT_EQ(first_ids.size(), 3u);
  auto drop = loop.between_steps([&] { model->drop_adapter(0); }, 0);
  EXPECT_EQ(drop.wait_for(300ms), std::future_status::timeout) << "it ran while a place was reserved for the adapter";
  RequestStream::State st{};
  EXPECT_EQ(drain_stream(*loop.submit({785, 6722, 315}, with_a, &*room), &st), first_ids);
  EXPECT_EQ(st, RequestStream::State::Finished);
  ASSERT_EQ(drop.wait_for(10s), std::future_status::ready);
  drop.get();
  // A reservation that goes unused lets it go too.
  std::optional<EngineLoop::Reservation> unused = loop.reserve(3, 0);
  auto second_drop = loop.between_steps([] {}, 0);
  EXPECT_EQ(second_drop.wait_for(300ms), std::future_status::timeout);
  unused.reset();
  EXPECT_EQ(second_drop.wait_for(10s), std::future_status::ready);
}
