// SPDX-License-Identifier: MIT
#include "peer_table.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "ditask/router.hpp"

namespace ditask::detail {

namespace {
RemoteEvent membership_notice(const char* event, const PeerRecord& peer) {
  RemoteEvent e;
  e.event = event;
  e.notice = true;
  auto& kwargs = e.args.emplace().kwargs;
  kwargs["node_id"] = peer.node;
  kwargs["attempt"] = peer.attempt;
  return e;
}
}  // namespace

bool labels_match(const std::set<std::string>& labels, const std::string& pattern) {
  return std::any_of(labels.begin(), labels.end(), [&](const std::string& label) {
    return ::fnmatch(pattern.c_str(), label.c_str(), 0) == 0;
  });
}

RemoteEvent peer_joined_notice(const PeerRecord& peer) {
  RemoteEvent e = membership_notice(events::peer_joined, peer);
  auto& kwargs = e.args->kwargs;
  kwargs["labels"] = peer.labels;
  kwargs["address"] = peer.listen;
  return e;
}

RemoteEvent peer_left_notice(const PeerRecord& peer, const std::string& reason, std::uint64_t lost) {
  RemoteEvent e = membership_notice(events::peer_left, peer);
  auto& kwargs = e.args->kwargs;
  kwargs["reason"] = reason;
  kwargs["lost"] = lost;
  return e;
}

}  // namespace ditask::detail
