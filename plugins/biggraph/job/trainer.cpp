// SPDX-License-Identifier: MIT
// A biggraph trainer: for each epoch, asks the lock server for buckets until none is left,
// fetches the bucket's two partitions from their partition servers, pulls the relations from the
// parameter servers, trains, pushes the relation gradients (asynchronously) and the partitions
// back; at the epoch's end the trainers meet (group barrier, all-reduce of their counts) and
// trainer 0 evaluates. A partition server that dies mid-bucket costs the bucket (abandoned, then
// trained again) and that server's partitions (they restart from random); a lock server that
// dies costs the epoch's progress (lock_client.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include <ditask/ditask.hpp>

#include "job.hpp"
#include "lock_client.hpp"

namespace biggraph {

namespace {

using Clock = std::chrono::steady_clock;

// The bucket's tables from their servers (one fetch for a diagonal bucket).
struct Fetched {
  PartitionTable lhs, rhs;
  bool diagonal = false;
};

Fetched fetch(const Layout& layout, int lhs, int rhs) {
  auto& rpc = ditask::rpc();
  Fetched f;
  f.diagonal = lhs == rhs;
  auto l = rpc.call_async<std::vector<std::uint8_t>>(layout.partition_server_of(lhs), kGet, lhs);
  if (!f.diagonal) {
    auto r = rpc.call_async<std::vector<std::uint8_t>>(layout.partition_server_of(rhs), kGet, rhs);
    f.rhs = PartitionTable::from_bytes(r.get());
  }
  f.lhs = PartitionTable::from_bytes(l.get());
  return f;
}

std::vector<Relation> pull_relations(const Layout& layout, const JobData& data) {
  auto& rpc = ditask::rpc();
  std::vector<ditask::Future<std::vector<std::uint8_t>>> pulls;
  for (int r = 0; r < static_cast<int>(data.graph.relations.size()); ++r) {
    pulls.push_back(rpc.call_async<std::vector<std::uint8_t>>(layout.parameter_server_of(r), kPull, r));
  }
  std::vector<Relation> out;
  for (auto& f : pulls) {
    Relation rel(data.params.train.dim);
    rel.vector = bytes_floats(f.get());
    out.push_back(std::move(rel));
  }
  return out;
}

// Trainer 0's view of the model now: every partition and relation, fetched.
Ranking evaluate_now(const Layout& layout, const JobData& data) {
  auto& rpc = ditask::rpc();
  std::vector<PartitionTable> tables;
  for (int p = 0; p < data.params.partitions; ++p) {
    tables.push_back(PartitionTable::from_bytes(
        rpc.call<std::vector<std::uint8_t>>(layout.partition_server_of(p), kGet, p)));
  }
  const auto relations = pull_relations(layout, data);
  return evaluate(data.split.test, data.parts, tables, relations, data.params.candidates, data.params.eval_edges,
                  data.params.seed + 7);
}

// True for a call that failed because a server went away (it may come back under --auto-recover).
bool server_gone(const ditask::RpcError& e) {
  return e.kind() == ditask::RpcError::Kind::node_left || e.kind() == ditask::RpcError::Kind::not_connected;
}

// Waits until node `server` is a peer again (its restart joined); a join between the look and
// the wait is caught by the waiter made before the look. Errors: std::runtime_error after
// `limit`.
void wait_for_return(std::int64_t server, std::chrono::seconds limit) {
  auto& task = ditask::task();
  const auto deadline = Clock::now() + limit;
  for (;;) {
    auto joined = task.waiter(ditask::events::peer_joined);
    const auto peers = task.router().peers();
    if (std::any_of(peers.begin(), peers.end(), [&](const ditask::PeerInfo& p) { return p.node_id == server; })) {
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !joined.wait(left)) {
      throw std::runtime_error("biggraph: server node " + std::to_string(server) + " did not come back within " +
                               std::to_string(limit.count()) + " s");
    }
  }
}

// Restarts of the job's workers so far (--auto-recover): each one's attempt, summed over this
// node and its peers.
std::int64_t job_restarts() {
  std::int64_t restarts = worker_attempt();
  for (const auto& peer : ditask::task().router().peers()) {
    restarts += peer.attempt;
  }
  return restarts;
}

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

}  // namespace

void run_trainer(const JobData& data) {
  auto& task = ditask::task();
  auto running = task.start();
  task.ready();
  const auto layout = Layout::current();
  auto group = task.group("trainer");
  const bool leader = group.index() == 0;
  const auto self = task.router().node_id();
  const auto& p = data.params;
  auto& rpc = ditask::rpc();
  LockClient lock_server(layout.lock_servers.front(), self, std::chrono::seconds(120));
  std::mt19937_64 rng(p.seed * 7919u + static_cast<std::uint64_t>(self));
  if (leader) {
    const auto base = degree_baseline(data.split.test, data.parts, data.split.buckets, p.candidates, p.eval_edges, p.seed + 7);
    std::cout << "biggraph: " << data.graph.entities.size() << " entities, " << data.graph.relations.size()
              << " relations, " << data.graph.edges.size() << " edges (" << data.split.test.size()
              << " held out), " << p.partitions << " partitions, " << group.size() << " trainer(s)" << std::endl;
    std::cout << "biggraph: degree baseline: MRR " << fixed(base.mrr, 4) << ", Hits@10 " << fixed(base.hits10, 4)
              << " (" << base.count << " held-out edges, " << p.candidates << " candidates)" << std::endl;
  }
  Ranking last;
  double rate_sum = 0;
  int lost_buckets = 0;
  for (int epoch = 0; epoch < p.epochs; ++epoch) {
    const auto start = Clock::now();
    BucketStats mine;
    std::vector<ditask::Future<void>> pushes;
    for (;;) {
      const nlohmann::json grant = lock_server.acquire(epoch);
      if (!grant.contains("lhs")) {
        if (grant.value("done", false)) {
          break;
        }
        continue;  // every pending bucket is blocked for now: ask again (the server waited)
      }
      const int lhs = grant["lhs"], rhs = grant["rhs"];
      try {
        auto tables = fetch(layout, lhs, rhs);
        const auto relations = pull_relations(layout, data);
        std::vector<Eigen::VectorXf> gradients(relations.size(), Eigen::VectorXf::Zero(p.train.dim));
        const auto& edges = data.split.buckets[static_cast<std::size_t>(lhs * p.partitions + rhs)];
        auto& right = tables.diagonal ? tables.lhs : tables.rhs;
        const auto stats = train_bucket(edges, data.parts, tables.lhs, right, relations, gradients, p.train, rng);
        mine.edges += stats.edges;
        mine.loss += stats.loss;
        for (int r = 0; r < static_cast<int>(gradients.size()); ++r) {
          pushes.push_back(rpc.call_async<void>(layout.parameter_server_of(r), kPush, r, float_bytes(gradients[static_cast<std::size_t>(r)])));
        }
        auto put_l = rpc.call_async<void>(layout.partition_server_of(lhs), kPut, lhs, tables.lhs.to_bytes());
        if (!tables.diagonal) {
          rpc.call<void>(layout.partition_server_of(rhs), kPut, rhs, tables.rhs.to_bytes());
        }
        put_l.get();
        lock_server.release(lhs, rhs);
      } catch (const ditask::RpcError& e) {
        if (!server_gone(e)) {
          throw;
        }
        // A partition or parameter server left: give the bucket back; it is trained again once
        // the server is back (its restart serves fresh partitions).
        std::cout << "biggraph: trainer " << self << ": bucket (" << lhs << ", " << rhs << ") abandoned: " << e.reason()
                  << std::endl;
        ++lost_buckets;
        lock_server.abandon();
        wait_for_return(e.node(), std::chrono::seconds(120));  // then ask again
      }
    }
    for (auto& f : pushes) {
      try {
        f.get();
      } catch (const ditask::RpcError& e) {
        if (!server_gone(e)) {
          throw;
        }
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // Every trainer's counts, summed: edges, loss, and edges per second per trainer.
    const auto sums = group.all_reduce({static_cast<double>(mine.edges), mine.loss, static_cast<double>(mine.edges) / std::max(seconds, 1e-9)});
    if (leader) {
      lock_server.next_epoch(epoch + 1);
      last = evaluate_now(layout, data);
      const double per_trainer = sums[2] / static_cast<double>(group.size());
      rate_sum += per_trainer;
      auto& curves = ditask::metrics();  // --metrics-dir: TensorBoard's view of the epochs
      curves.scalar("loss", epoch + 1, sums[1] / std::max(sums[0], 1.0));
      curves.scalar("mrr", epoch + 1, last.mrr);
      curves.scalar("hits10", epoch + 1, last.hits10);
      curves.scalar("edges_per_second_per_trainer", epoch + 1, per_trainer);
      std::cout << "biggraph: epoch " << epoch + 1 << "/" << p.epochs << ": loss " << fixed(sums[1] / std::max(sums[0], 1.0), 4)
                << ", " << static_cast<long long>(sums[0]) << " edges, " << static_cast<long long>(per_trainer)
                << " edges/s per trainer, MRR " << fixed(last.mrr, 4) << ", Hits@10 " << fixed(last.hits10, 4) << std::endl;
    }
    group.barrier();  // the next epoch's buckets are there for everyone
  }
  if (leader) {
    const auto base = degree_baseline(data.split.test, data.parts, data.split.buckets, p.candidates, p.eval_edges, p.seed + 7);
    std::cout << "RESULT trainers=" << group.size() << " mrr=" << fixed(last.mrr, 4) << " hits10=" << fixed(last.hits10, 4)
              << " baseline_mrr=" << fixed(base.mrr, 4) << " baseline_hits10=" << fixed(base.hits10, 4)
              << " edges_per_s_per_trainer=" << static_cast<long long>(rate_sum / std::max(p.epochs, 1))
              << " abandoned=" << lost_buckets << " restarts=" << job_restarts() << std::endl;
    task.emit_remote(kShutdown);
  } else if (lost_buckets > 0) {
    std::cout << "biggraph: trainer " << self << " abandoned " << lost_buckets << " bucket(s)" << std::endl;
  }
}

}  // namespace biggraph
