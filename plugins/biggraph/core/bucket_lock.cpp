// SPDX-License-Identifier: MIT
#include "bucket_lock.hpp"

namespace biggraph {

BucketLock::BucketLock(int partitions) : partitions_(partitions) {
  if (partitions < 1) {
    throw std::invalid_argument("a bucket lock needs at least 1 partition, not " + std::to_string(partitions));
  }
  holders_.assign(static_cast<std::size_t>(partitions), 0);
  for (int l = 0; l < partitions; ++l) {
    for (int r = 0; r < partitions; ++r) {
      pending_.insert(Bucket{l, r});
    }
  }
}

bool BucketLock::free_locked(const Bucket& b) const {
  return holders_[static_cast<std::size_t>(b.lhs)] == 0 && holders_[static_cast<std::size_t>(b.rhs)] == 0;
}

Grant BucketLock::acquire(std::int64_t trainer) {
  std::lock_guard lock(mutex_);
  return acquire_locked(trainer);
}

Grant BucketLock::acquire_wait(std::int64_t trainer, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  Grant grant;
  changed_.wait_for(lock, timeout, [&] {
    grant = acquire_locked(trainer);
    return grant.bucket || grant.epoch_done;
  });
  return grant;
}

Grant BucketLock::acquire_locked(std::int64_t trainer) {
  if (held_.count(trainer) != 0) {
    throw std::logic_error("trainer " + std::to_string(trainer) + " asks for a bucket while it holds one");
  }
  Grant grant;
  if (pending_.empty()) {
    grant.epoch_done = held_.empty();
    return grant;
  }
  std::optional<Bucket> chosen;
  const auto previous = last_.find(trainer);
  for (const auto& b : pending_) {
    if (!free_locked(b)) {
      continue;
    }
    const bool shares = previous != last_.end() &&
                        (b.lhs == previous->second.lhs || b.lhs == previous->second.rhs ||
                         b.rhs == previous->second.lhs || b.rhs == previous->second.rhs);
    if (!chosen || shares) {
      chosen = b;
      if (shares) {
        break;
      }
    }
  }
  if (!chosen) {
    return grant;  // every pending bucket touches a held partition: ask again later
  }
  pending_.erase(*chosen);
  held_[trainer] = *chosen;
  ++holders_[static_cast<std::size_t>(chosen->lhs)];
  if (chosen->rhs != chosen->lhs) {
    ++holders_[static_cast<std::size_t>(chosen->rhs)];
  }
  grant.bucket = chosen;
  return grant;
}

void BucketLock::release(std::int64_t trainer, const Bucket& bucket) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(trainer);
  if (it == held_.end() || !(it->second == bucket)) {
    throw std::logic_error("trainer " + std::to_string(trainer) + " releases bucket (" + std::to_string(bucket.lhs) +
                           ", " + std::to_string(bucket.rhs) + "), which it does not hold");
  }
  --holders_[static_cast<std::size_t>(bucket.lhs)];
  if (bucket.rhs != bucket.lhs) {
    --holders_[static_cast<std::size_t>(bucket.rhs)];
  }
  last_[trainer] = bucket;
  held_.erase(it);
  changed_.notify_all();
}

void BucketLock::trainer_left(std::int64_t trainer) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(trainer);
  if (it == held_.end()) {
    return;
  }
  const Bucket b = it->second;
  --holders_[static_cast<std::size_t>(b.lhs)];
  if (b.rhs != b.lhs) {
    --holders_[static_cast<std::size_t>(b.rhs)];
  }
  pending_.insert(b);
  held_.erase(it);
  last_.erase(trainer);
  changed_.notify_all();
}

void BucketLock::next_epoch() {
  std::lock_guard lock(mutex_);
  if (!pending_.empty() || !held_.empty()) {
    throw std::logic_error("the epoch is not done: " + std::to_string(pending_.size() + held_.size()) +
                           " bucket(s) pending or held");
  }
  for (int l = 0; l < partitions_; ++l) {
    for (int r = 0; r < partitions_; ++r) {
      pending_.insert(Bucket{l, r});
    }
  }
  ++epoch_;
  changed_.notify_all();
}

void BucketLock::resume_at(int epoch) {
  std::lock_guard lock(mutex_);
  if (!held_.empty() || !last_.empty() ||
      pending_.size() != static_cast<std::size_t>(partitions_) * static_cast<std::size_t>(partitions_)) {
    throw std::logic_error("a lock server resumes at an epoch only before it hands out a bucket");
  }
  epoch_ = epoch;
  changed_.notify_all();
}

std::size_t BucketLock::remaining() const {
  std::lock_guard lock(mutex_);
  return pending_.size() + held_.size();
}

int BucketLock::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

}  // namespace biggraph
