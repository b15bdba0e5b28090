// The HTTP connection threads: jobs run, and the pool ends whether or not
// httplib ever took it.
#include "server/connection_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace qinfer::server;
using namespace std::chrono_literals;

TEST(ConnectionThreads, RunsEveryJobThenShutsDown) {
  std::atomic<int> done{0};
  ConnectionThreads threads(3);
  for (int i = 0; i < 10; ++i) threads.enqueue([&] { ++done; });
  threads.shutdown();
  EXPECT_EQ(done, 10);
}

// A re-hunt finding: serve's pool destroyed without shutdown() (a thread that
// failed to start after bind()) destroyed a condition variable its idle
// workers waited on: serve hung for good, deaf to SIGTERM.
TEST(ConnectionThreads, ADestroyedPoolThatWasNeverShutDownEnds) {
  std::atomic<bool> ended{false};
  std::thread t([&] {
    { ConnectionThreads idle(4); }
    ended = true;
  });
  for (int i = 0; i < 200 && !ended; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(ended) << "the destructor hung";
  t.join();
}
