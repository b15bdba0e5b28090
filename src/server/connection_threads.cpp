#include "server/connection_threads.h"

#include <system_error>

#include "util/error.h"

namespace qinfer::server {

ConnectionThreads::ConnectionThreads(size_t n) {
  try {
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    shutdown();
    fail("cannot start ", n,
         " HTTP threads (--http-threads; the default is --parallel + --max-queue + 16): ", e.what());
  }
}

void ConnectionThreads::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(fn));
  }
  ready_.notify_one();
}

void ConnectionThreads::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ConnectionThreads::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace qinfer::server
