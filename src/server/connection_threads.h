// The threads that serve HTTP connections: httplib's ThreadPool, but one
// that fails cleanly. When the system refuses a thread (a process limit), the
// threads started are joined and an Error names the count, where httplib's
// would destroy joinable threads (std::terminate).
#pragma once
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qinfer::server {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t n);
  ~ConnectionThreads() override { shutdown(); }  // when httplib never took it (serve() not reached)
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // runs the jobs queued, then joins every thread

 private:
  void work();

  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  bool stopping_ = false;
};

}  // namespace qinfer::server
