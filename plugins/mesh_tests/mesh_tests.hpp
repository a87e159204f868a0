// SPDX-License-Identifier: MIT
// Helpers shared by the entries of the mesh test module: module parameters, a state that handlers
// update and the entry waits on, and the RESULT lines the integration tests parse.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ditask/ditask.hpp>

namespace mesh_tests {

using namespace std::chrono_literals;

/// The module arguments as `key=value` pairs (`ditask ... -- count=100 size=64`), any key.
using Params = ditask::ModuleArgs;

/// A value shared between handlers (dispatcher thread) and the entry (its own thread).
/// Thread: any; update() wakes every wait().
template <class T>
class Shared {
 public:
  /// Calls `fn(value)` under the lock, then wakes the waiters.
  template <class F>
  void update(F&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn(value_);
    }
    changed_.notify_all();
  }
  /// A copy of the value.
  T get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return value_;
  }
  /// Waits until `done(value)` holds; false after `timeout` (a bound against a hang, never a
  /// synchronisation: the condition is what the entry waits for).
  template <class P>
  bool wait_until(P&& done, std::chrono::milliseconds timeout = 60s) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return done(value_); });
  }
  /// wait_until(), but fails the entry. Errors: std::runtime_error naming `what` on timeout.
  template <class P>
  void wait(P&& done, const std::string& what, std::chrono::milliseconds timeout = 60s) const {
    if (!wait_until(std::forward<P>(done), timeout)) {
      throw std::runtime_error("timed out after " + std::to_string(timeout.count()) +
                               " ms waiting for " + what);
    }
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  T value_{};
};

/// This worker's node id.
std::int64_t node_id();

/// This worker's DITASK_ATTEMPT (0 when unset).
std::int64_t attempt();

/// Prints "RESULT <text>" on stdout as one flushed line (the tests read "[node N] RESULT ...").
void result(const std::string& text);

/// Prints "<tag> <text>" on stdout as one flushed line (progress lines the tests wait for).
void say(const std::string& tag, const std::string& text);

/// Waits until every event frame this worker sent was acknowledged or counted lost.
/// Errors: std::runtime_error with the counters after `timeout`.
void drain(std::chrono::milliseconds timeout = 60s);

/// This worker's listen address (DITASK_LISTEN), or "<unset>".
std::string listen_address();

/// The connected peers as "id@attempt" items, by node id ("1@0,2@0").
std::string peers_text();

/// The connected peers in full: "id@attempt|address|label;label" items separated by spaces.
std::string peers_detail();

/// Node ids of the connected peers, sorted.
std::set<std::int64_t> peer_ids();

/// True when `have` holds every element of `want`.
template <class S>
bool contains_all(const S& have, const S& want) {
  for (const auto& item : want) {
    if (have.count(item) == 0) {
      return false;
    }
  }
  return true;
}

/// `size` bytes whose byte k is (seed + k) mod 256: cheap to make and to check.
std::vector<std::uint8_t> pattern_bytes(std::int64_t seed, std::size_t size);

/// True when `bytes` is pattern_bytes(seed, expected_size), sampling every 4 KiB and the last byte.
bool is_pattern(const std::vector<std::uint8_t>& bytes, std::int64_t seed,
                std::size_t expected_size);

/// What a reader of pattern blobs (blob number i = pattern_bytes(i, size)) has seen.
struct BlobTally {
  std::int64_t received = 0;
  std::int64_t corrupt = 0;
  std::int64_t inversions = 0;  ///< blobs that did not come in their number's turn
  std::uint64_t bytes = 0;
  /// Counts blob number `i` of `blob_bytes` bytes; `intact`: it passed is_pattern().
  void add(std::int64_t i, std::size_t blob_bytes, bool intact) {
    inversions += i == received ? 0 : 1;
    ++received;
    corrupt += intact ? 0 : 1;
    bytes += blob_bytes;
  }
};

/// One peer_joined / peer_left event as "node@attempt" ("1@0"), plus ":reason" for a leave.
std::string membership_text(const ditask::Kwargs& kw, bool left);

/// Logs node 1's leaves and rejoins (membership_text) in `state.membership`, in order, and sets
/// `state.rejoined` once it joined again. Its first join may be dispatched after these handlers
/// were registered, so joins of attempt 0 are not logged.
template <class State>
void watch_node_1(ditask::Task& task, Shared<State>& state) {
  task.on(ditask::events::peer_left, [&state](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == 1) {
      state.update([&](auto& s) { s.membership.push_back(membership_text(kw, true)); });
    }
  });
  task.on(ditask::events::peer_joined, [&state](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == 1 && kw.get<std::int64_t>("attempt") >= 1) {
      state.update([&](auto& s) {
        s.membership.push_back(membership_text(kw, false));
        s.rejoined = true;
      });
    }
  });
}

/// "a,b,c" from a sequence of printable values.
template <class C>
std::string joined(const C& items, const char* sep = ",") {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : items) {
    out << (first ? "" : sep) << item;
    first = false;
  }
  return out.str();
}

}  // namespace mesh_tests
