#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

using qinfer::ThreadPool;

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<std::atomic<int>> hits(3);
    pool.run([&](int t) { hits[t]++; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnceInGrainMultiples) {
  ThreadPool pool(2);
  for (size_t n : {1u, 7u, 64u, 1001u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 16, [&](size_t b, size_t e) {
      EXPECT_EQ(b % 16, 0u);
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  int calls = 0;
  pool.parallel_for(10, 1, [&](size_t b, size_t e) { calls += static_cast<int>(e - b); });
  EXPECT_EQ(calls, 10);
}

TEST(ThreadPool, ParallelForDynamicCoversRangeExactlyOnceInChunks) {
  ThreadPool pool(3);
  for (size_t n : {1u, 5u, 64u, 1001u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for_dynamic(n, 8, [&](size_t b, size_t e) {
      EXPECT_EQ(b % 8, 0u);
      EXPECT_LE(e - b, 8u);
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}
