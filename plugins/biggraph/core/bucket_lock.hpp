// SPDX-License-Identifier: MIT
// PyTorch-BigGraph's lock server, as a value: hands out edge buckets (lhs partition, rhs
// partition) so that no partition is held by two trainers at once and every bucket is trained
// once per epoch. Pure C++; the biggraph job serves it over RPC from its lock_server node.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace biggraph {

/// One bucket: the edges from partition `lhs` to partition `rhs`.
struct Bucket {
  int lhs = 0;
  int rhs = 0;
  friend bool operator==(const Bucket&, const Bucket&) = default;
  friend auto operator<=>(const Bucket&, const Bucket&) = default;
};

/// What acquire() answers.
struct Grant {
  std::optional<Bucket> bucket;  ///< the bucket to train, or none for now
  bool epoch_done = false;       ///< every bucket of the epoch is done: nothing more will come
};

/// Thread: every method is safe from any thread (one mutex).
class BucketLock {
 public:
  /// `partitions` P >= 1: P x P buckets per epoch. Errors: std::invalid_argument.
  explicit BucketLock(int partitions);

  /// A pending bucket none of whose partitions another trainer holds, or none (wait and ask
  /// again) when every pending one is blocked. Prefers a bucket that shares a partition with the
  /// trainer's previous one (fewer partitions to swap, as PBG does). Errors: std::logic_error
  /// when `trainer` holds a bucket already.
  Grant acquire(std::int64_t trainer);
  /// acquire(), but waits (at most `timeout`) while every pending bucket is blocked by another
  /// trainer's partitions; returns an empty grant after the timeout.
  Grant acquire_wait(std::int64_t trainer, std::chrono::milliseconds timeout);
  /// `trainer` finished `bucket`: it is done for this epoch and its partitions are free.
  /// Errors: std::logic_error when `trainer` does not hold `bucket`.
  void release(std::int64_t trainer, const Bucket& bucket);
  /// `trainer` is gone: the bucket it held is pending again (trained by someone else).
  void trainer_left(std::int64_t trainer);
  /// Starts the next epoch: every bucket pending again. Errors: std::logic_error while a bucket
  /// is held or pending.
  void next_epoch();
  /// A restarted lock server's start: epoch `epoch` (0 first) with every bucket pending, since
  /// which of them were trained before the restart is not known. Errors: std::logic_error once
  /// a bucket was handed out or released.
  void resume_at(int epoch);

  int partitions() const noexcept { return partitions_; }
  /// Buckets not done yet this epoch (held ones included).
  std::size_t remaining() const;
  /// The epoch number (0 first).
  int epoch() const;

 private:
  bool free_locked(const Bucket& b) const;
  Grant acquire_locked(std::int64_t trainer);

  const int partitions_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;            // a bucket was released or returned, an epoch began
  std::set<Bucket> pending_;                   // guarded by mutex_
  std::map<std::int64_t, Bucket> held_;        // guarded by mutex_: trainer -> its bucket
  std::map<std::int64_t, Bucket> last_;        // guarded by mutex_: each trainer's previous bucket
  std::vector<int> holders_;                   // guarded by mutex_: per partition, trainers holding it
  int epoch_ = 0;                              // guarded by mutex_
};

}  // namespace biggraph
