// SPDX-License-Identifier: MIT
// Remote objects on one node: the objects it owns (who holds a handle to each), the handles it
// holds to other nodes' objects, and the hand-offs of handles in flight. The protocol is
// PyTorch's RRef protocol, simplified: docs/rpc.md "Lifetime".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ditask/rref.hpp"
#include "rpc_wire.hpp"

namespace ditask::detail {

/// Thread: any (one mutex); user objects are destroyed outside it.
class ObjectTable {
 public:
  /// Sends a handle message (queued on the engine's service thread, never the io thread).
  using SendRef = std::function<void(std::int64_t to, rpc_wire::RefOp op, std::uint64_t object,
                                     std::uint64_t token, std::int64_t about)>;
  ObjectTable(std::int64_t self, SendRef send) : self_(self), send_(std::move(send)) {}

  /// Sets where its records tell their drop: this table, as its owner shares it (once, before use).
  void set_self(std::weak_ptr<ObjectTable> self) { self_ref_ = std::move(self); }

  // ---- owner side ----
  /// Makes `object` callable and returns this node's record of it.
  std::shared_ptr<RefRecord> adopt(std::shared_ptr<void> object, const std::string& class_name);
  /// An owned object and its class, or nullopt.
  struct Found {
    std::shared_ptr<void> object;
    std::string class_name;
  };
  std::optional<Found> find(std::uint64_t id) const;

  // ---- handles in calls ----
  /// The JSON of `record` sent to node `dest` (registering the hand-off).
  json to_json(const std::shared_ptr<RefRecord>& record, std::int64_t dest);
  /// Takes back the registrations to_json() made on this thread since the last
  /// forget_registrations(): what carried them was never sent (a later value failed to encode).
  static void cancel_registrations() noexcept;
  /// Forgets this thread's registrations: what carried them was sent, or a new encoding begins.
  static void forget_registrations() noexcept;
  /// This node's record for a handle received as JSON (from `from` when a fork token is set).
  /// Errors: ditask::Error for a malformed handle, one of another class, or an owned object
  /// that no longer exists.
  std::shared_ptr<RefRecord> from_json(const json& value, const std::string* expected_class);

  /// A handle message from `sender`. Thread: the engine's service thread.
  void on_ref(std::int64_t sender, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token, std::int64_t about);
  /// The last copy of `record` in this process went. Thread: any.
  void record_dropped(const RefRecord& record) noexcept;
  /// `node` left: its handles to this node's objects are released, hand-offs to it dropped.
  void node_left(std::int64_t node);
  /// Objects owned now, and handles to other nodes' objects held now.
  std::size_t owned() const;
  std::size_t held() const;
  /// At stop: releases the handles held (returned: owner, object, registrations, for the
  /// caller to send), drops hand-offs, destroys the owned objects; later drops are ignored.
  std::vector<std::tuple<std::int64_t, std::uint64_t, std::int64_t>> clear() noexcept;

 private:
  struct Owned {
    std::shared_ptr<void> object;
    std::string class_name;
    std::map<std::int64_t, std::int64_t> holders;  // node -> registrations
    std::weak_ptr<RefRecord> local;                // this node's own record, while alive
  };
  struct Held {
    std::weak_ptr<RefRecord> record;
    const RefRecord* raw = nullptr;
    std::int64_t registrations = 0;
  };
  struct Fork {
    std::shared_ptr<RefRecord> keep;  // this node's hold, until the receiver is registered
    std::int64_t dest = 0;
  };
  using Key = std::pair<std::int64_t, std::uint64_t>;  // owner, object

  // Removes object `id` when nobody holds it; returns it for destruction outside the lock.
  std::shared_ptr<void> collect_locked(std::uint64_t id);
  // Takes `count` registrations of `holder` off owned object `id`, then collect_locked(id).
  std::shared_ptr<void> release_locked(std::uint64_t id, std::int64_t holder, std::int64_t count);
  // Ends hand-off `token`: returns this node's hold of it (null when none), to drop outside the lock.
  std::shared_ptr<RefRecord> take_fork_locked(std::uint64_t token);
  std::shared_ptr<RefRecord> local_record_locked(std::uint64_t id, Owned& owned);
  // Undoes one registration of to_json(): the holder count of owned object `id` for `dest`
  // (token 0), or the hand-off `token`.
  void cancel(std::uint64_t id, std::int64_t dest, std::uint64_t token) noexcept;

  const std::int64_t self_;
  const SendRef send_;
  std::weak_ptr<ObjectTable> self_ref_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Owned> owned_;     // guarded by mutex_
  std::map<Key, Held> held_;                 // guarded by mutex_
  std::map<std::uint64_t, Fork> forks_;      // guarded by mutex_
  std::uint64_t next_object_ = 1;            // guarded by mutex_
  std::uint64_t next_token_ = 1;             // guarded by mutex_
  std::atomic<bool> cleared_{false};
};

}  // namespace ditask::detail
