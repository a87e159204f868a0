// SPDX-License-Identifier: MIT
// What the Redis transport says on the run's control channel and in presence keys: hellos (who a
// process is, and which events it handles) and interest notices (a change of the latter), and
// the rule that the newest of them wins. docs/redis.md.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "../transport/peer_table.hpp"

namespace ditask::detail::redis {

/// The event names a peer handles (nullopt: all), with the number of the change that set them.
/// A process numbers its interest changes from 0 (its first hello) on; its hellos and notices
/// carry the number. They come on two connections (a presence key read with MGET on one, a
/// notice on the subscription of the other), so an older one can arrive after a newer one.
struct PeerInterest {
  std::uint64_t version = 0;
  std::optional<std::set<std::string>> names;
  /// Takes `names` unless this holds a newer change already; true when taken.
  bool offer(std::uint64_t change, std::optional<std::set<std::string>> what);
};

/// A hello or an interest notice, read.
struct PresenceMessage {
  PeerRecord peer;      ///< node and instance; attempt and labels for a hello only
  bool notice = false;  ///< an interest notice (else a hello)
  PeerInterest interest;
};

/// This process's hello: node, attempt, instance, labels and its interest.
std::string hello_text(const PeerRecord& self, const PeerInterest& interest);
/// A notice that this process's interest changed.
std::string interest_notice_text(std::int64_t node, std::uint64_t instance, const PeerInterest& interest);
/// Reads either. A message without a change number (an older ditask) counts as change 0.
/// Errors: std::exception for malformed text.
PresenceMessage parse_presence(std::string_view text);

}  // namespace ditask::detail::redis
