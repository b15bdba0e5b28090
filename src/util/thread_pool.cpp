#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() {}
#endif

namespace qinfer {

namespace {
// How long a thread polls before it sleeps (worker) or yields (caller): longer
// than the gap between two kernels of a forward pass, short enough that an
// idle pool gives its cores back at once.
constexpr auto kSpinTime = std::chrono::microseconds(50);

// Polls done() with pause instructions for up to kSpinTime; true when it became true.
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int t) {
  uint32_t seen = 0;
  for (;;) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    (*job_)(t);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  fn(0);
  // Workers finish within microseconds unless the OS descheduled one (an
  // oversubscribed machine): then give the core away instead of spinning.
  auto all_done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(all_done))
    while (!all_done()) std::this_thread::yield();
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t blocks = (n + grain - 1) / grain;
  const size_t nt = std::min<size_t>(static_cast<size_t>(n_threads_), blocks);
  if (nt <= 1) {
    fn(0, n);
    return;
  }
  run([&](int t) {
    if (static_cast<size_t>(t) >= nt) return;
    const size_t b0 = blocks * t / nt, b1 = blocks * (t + 1) / nt;
    const size_t begin = b0 * grain, end = std::min(n, b1 * grain);
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::parallel_for_dynamic(size_t n, size_t chunk, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  chunk = std::max<size_t>(chunk, 1);
  const size_t chunks = (n + chunk - 1) / chunk;
  if (n_threads_ == 1 || chunks == 1) {
    fn(0, n);
    return;
  }
  std::atomic<size_t> next{0};
  run([&](int) {
    for (size_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
      fn(c * chunk, std::min(n, (c + 1) * chunk));
  });
}

}  // namespace qinfer
