// SPDX-License-Identifier: MIT
// The biggraph job's lock server (plugins/biggraph/core/bucket_lock.hpp): no partition is ever
// held by two trainers, every bucket is trained once per epoch, under concurrent requests too.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bucket_lock.hpp"

namespace biggraph_test {  // a unity batch shares one translation unit: names of our own

using biggraph::Bucket;
using biggraph::BucketLock;

TEST_CASE("bucket lock: buckets never share a held partition, each once per epoch, misuse is refused",
          "[biggraph][unit]") {
  CHECK_THROWS_AS(BucketLock(0), std::invalid_argument);
  BucketLock lock(3);
  CHECK(lock.remaining() == 9);
  auto a = lock.acquire(1);
  REQUIRE(a.bucket);
  CHECK_THROWS_AS(lock.acquire(1), std::logic_error);  // one bucket per trainer at a time
  // Whatever trainer 2 gets touches neither of trainer 1's partitions.
  auto b = lock.acquire(2);
  if (b.bucket) {
    const std::set<int> first = {a.bucket->lhs, a.bucket->rhs};
    CHECK(first.count(b.bucket->lhs) == 0);
    CHECK(first.count(b.bucket->rhs) == 0);
  }
  CHECK_THROWS_AS(lock.release(2, *a.bucket), std::logic_error);  // not its bucket
  CHECK_THROWS_AS(lock.next_epoch(), std::logic_error);           // the epoch is not done
  lock.release(1, *a.bucket);
  if (b.bucket) {
    lock.trainer_left(2);  // its bucket is pending again
  }
  std::set<Bucket> trained = {*a.bucket};
  for (;;) {
    auto g = lock.acquire(3);
    if (!g.bucket) {
      CHECK(g.epoch_done);
      break;
    }
    CHECK(trained.insert(*g.bucket).second);  // never twice in one epoch
    lock.release(3, *g.bucket);
  }
  CHECK(trained.size() == 9);
  CHECK(lock.remaining() == 0);
  lock.next_epoch();
  CHECK(lock.epoch() == 1);
  CHECK(lock.remaining() == 9);
}

TEST_CASE("bucket lock: a restarted lock server resumes at the trainers' epoch, every bucket pending",
          "[biggraph][unit]") {
  BucketLock lock(2);
  lock.resume_at(3);
  CHECK(lock.epoch() == 3);
  CHECK(lock.remaining() == 4);
  auto g = lock.acquire(1);
  REQUIRE(g.bucket);
  CHECK_THROWS_AS(lock.resume_at(4), std::logic_error);  // too late: a bucket was handed out
  lock.release(1, *g.bucket);
  CHECK_THROWS_AS(lock.resume_at(4), std::logic_error);
  CHECK(lock.epoch() == 3);
}

TEST_CASE("bucket lock: 4 trainers on 4 partitions, 3 epochs, concurrently: no partition held twice, every bucket once",
          "[biggraph][unit]") {
  constexpr int kPartitions = 4, kTrainers = 4, kEpochs = 3;
  BucketLock lock(kPartitions);
  std::vector<std::atomic<int>> holding(kPartitions);
  std::atomic<int> violations{0};
  std::mutex mutex;
  std::map<std::pair<int, Bucket>, int> counts;  // (epoch, bucket) -> times trained
  std::atomic<bool> stop{false};
  std::vector<std::thread> trainers;
  for (int t = 0; t < kTrainers; ++t) {
    trainers.emplace_back([&, t] {
      while (!stop) {
        auto g = lock.acquire(t);
        if (!g.bucket) {
          std::this_thread::yield();  // blocked or the epoch is done: ask again
          continue;
        }
        const Bucket b = *g.bucket;
        const int seen_epoch = lock.epoch();  // fixed while a bucket is held (next_epoch waits for it)
        const std::set<int> parts = {b.lhs, b.rhs};
        for (int p : parts) {
          if (++holding[static_cast<std::size_t>(p)] != 1) {
            ++violations;
          }
        }
        {
          std::lock_guard guard(mutex);
          ++counts[{seen_epoch, b}];
        }
        std::this_thread::yield();
        for (int p : parts) {
          --holding[static_cast<std::size_t>(p)];
        }
        lock.release(t, b);
      }
    });
  }
  for (int e = 0; e < kEpochs; ++e) {
    while (lock.remaining() != 0) {
      std::this_thread::yield();
    }
    if (e + 1 < kEpochs) {
      lock.next_epoch();
    }
  }
  stop = true;
  for (auto& t : trainers) {
    t.join();
  }
  CHECK(violations == 0);
  CHECK(counts.size() == static_cast<std::size_t>(kEpochs * kPartitions * kPartitions));
  for (const auto& [key, n] : counts) {
    CAPTURE(key.first, key.second.lhs, key.second.rhs);
    CHECK(n == 1);
  }
}

}  // namespace biggraph_test
