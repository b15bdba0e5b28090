// A fixed pool of worker threads for data-parallel kernels. The calling thread
// takes part as worker 0. Between jobs workers spin for a bounded time (jobs in
// a forward pass come microseconds apart), then sleep on a futex so an idle
// engine costs no CPU.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace qinfer {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // total threads including the caller; <= 0: hardware threads
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(t) once for each t in [0, size()), in parallel; returns when all are done.
  void run(const std::function<void(int)>& fn);

  // Splits [0, n) into size() contiguous chunks of multiples of `grain` and
  // calls fn(begin, end) for each non-empty chunk.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

  // Calls fn(begin, end) for the chunks [0, chunk), [chunk, 2 chunk), ... of
  // [0, n), handing the next chunk to whichever thread is free: a thread the OS
  // descheduled (a shared machine) delays only the chunk it holds, not a
  // fixed share of the work.
  void parallel_for_dynamic(size_t n, size_t chunk, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_loop(int t);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace qinfer
