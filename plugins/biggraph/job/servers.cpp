// SPDX-License-Identifier: MIT
// The biggraph job's servers, each an ordinary worker whose role is a server and which speaks
// RPC: the lock server (edge buckets), partition servers (the embeddings of partitions not in
// use) and parameter servers (the relation operators, pushed and pulled asynchronously).
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include <ditask/ditask.hpp>

#include "bucket_lock.hpp"
#include "job.hpp"

namespace biggraph {

namespace {

// Returns once the job's trainer 0 says it is over (kShutdown). The handler shares the state
// (it may run after this returns) and wakes the wait under the lock, so the wait cannot end and
// destroy what the handler still touches.
void serve_until_shutdown() {
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool over = false;
  };
  auto state = std::make_shared<State>();
  auto& task = ditask::task();
  const auto id = task.on(kShutdown, [state] {
    std::lock_guard lock(state->mutex);
    state->over = true;
    state->changed.notify_all();
  });
  task.ready();
  {
    std::unique_lock lock(state->mutex);
    state->changed.wait(lock, [&] { return state->over; });
  }
  task.off(kShutdown, id);
}

}  // namespace

void run_lock_server(const JobData& data) {
  BucketLock lock(data.params.partitions);
  auto& rpc = ditask::rpc();
  const auto self = ditask::task().router().node_id();
  // A restarted server does not know where the job was: the trainers' first call says which
  // epoch they are in, and it begins that one with every bucket pending.
  std::mutex resume_mutex;
  bool resumed = worker_attempt() == 0;  // guarded by resume_mutex
  auto resume = [&](int epoch) {
    std::lock_guard guard(resume_mutex);
    if (!resumed) {
      resumed = true;
      lock.resume_at(epoch);
      std::cout << "lock server node " << self << " restarted: epoch " << epoch + 1
                << " begins again with every bucket pending (the record of those trained before is lost)" << std::endl;
    }
  };
  std::atomic<std::int64_t> acquires{0};
  // Each trainer's calls run on its own serving thread: a trainer waiting here blocks no other.
  rpc.define(kAcquire, [&](std::int64_t trainer, int epoch) -> nlohmann::json {
    if (worker_attempt() == 0 && data.params.die_at_acquire > 0 && ++acquires == data.params.die_at_acquire) {
      std::cout << "lock server node " << self << ": dying at acquire " << data.params.die_at_acquire
                << " (die_at_acquire)" << std::endl;
      std::_Exit(3);  // a crash mid-epoch: the test of --auto-recover (docs/biggraph.md)
    }
    resume(epoch);
    const auto grant = lock.acquire_wait(trainer, std::chrono::seconds(5));
    if (grant.bucket) {
      return {{"lhs", grant.bucket->lhs}, {"rhs", grant.bucket->rhs}};
    }
    return {{"done", grant.epoch_done}};
  });
  rpc.define(kRelease, [&lock](std::int64_t trainer, int lhs, int rhs) { lock.release(trainer, Bucket{lhs, rhs}); });
  rpc.define(kAbandon, [&lock](std::int64_t trainer) { lock.trainer_left(trainer); });
  rpc.define(kNextEpoch, [&](int epoch) {
    resume(epoch);
    if (lock.epoch() < epoch) {
      lock.next_epoch();
    }
  });
  // A trainer that dies gives its bucket back (a restart or another trainer trains it).
  auto& task = ditask::task();
  auto running = task.start();
  task.on(ditask::events::peer_left, [&lock](const ditask::Kwargs& kw) { lock.trainer_left(kw.get<std::int64_t>("node_id")); });
  serve_until_shutdown();
}

void run_partition_server(const JobData& data) {
  const auto& p = data.params;
  std::mutex mutex;
  std::map<int, std::vector<std::uint8_t>> tables;  // guarded by mutex: partition -> its table's bytes
  const bool restarted = worker_attempt() > 0;  // a restart's partitions are new
  bool told = false;
  std::int64_t gets = 0;  // guarded by mutex
  auto& rpc = ditask::rpc();
  rpc.define(kGet, [&](int partition) {
    std::lock_guard lock(mutex);
    if (!restarted && p.die_at_get > 0 && ++gets == p.die_at_get) {
      std::cout << "partition server node " << ditask::task().router().node_id() << ": dying at get " << gets
                << " (die_at_get)" << std::endl;
      std::_Exit(3);  // a crash mid-epoch: the test of --auto-recover (docs/biggraph.md)
    }
    auto it = tables.find(partition);
    if (it == tables.end()) {
      if (restarted && !told) {
        told = true;
        std::cout << "partition server node " << ditask::task().router().node_id()
                  << " restarted: its partitions start again from random (their training so far is lost)" << std::endl;
      }
      const auto rows = data.parts.sizes[static_cast<std::size_t>(partition)];
      it = tables.emplace(partition, PartitionTable::random(partition, rows, p.train, p.seed).to_bytes()).first;
    }
    return it->second;
  });
  rpc.define(kPut, [&](int partition, std::vector<std::uint8_t> bytes) {
    std::lock_guard lock(mutex);
    tables[partition] = std::move(bytes);
  });
  auto running = ditask::task().start();
  serve_until_shutdown();
}

void run_parameter_server(const JobData& data) {
  const auto& p = data.params;
  std::mutex mutex;
  std::map<int, Relation> relations;  // guarded by mutex: the relations this server holds
  auto relation = [&](int r) -> Relation& {
    auto it = relations.find(r);
    if (it == relations.end()) {
      it = relations.emplace(r, Relation(p.train.dim)).first;
    }
    return it->second;
  };
  auto& rpc = ditask::rpc();
  rpc.define(kPull, [&](int r) {
    std::lock_guard lock(mutex);
    return float_bytes(relation(r).vector);
  });
  rpc.define(kPush, [&](int r, std::vector<std::uint8_t> gradient) {
    std::lock_guard lock(mutex);
    relation(r).apply(bytes_floats(gradient), p.train.learning_rate);
  });
  auto running = ditask::task().start();
  serve_until_shutdown();
}

void run_idle() {
  auto running = ditask::task().start();
  serve_until_shutdown();
}

}  // namespace biggraph
