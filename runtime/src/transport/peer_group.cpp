// SPDX-License-Identifier: MIT
#include "peer_group.hpp"

namespace ditask::detail {

std::shared_ptr<const EventMeta> sender_meta(const PeerRecord& peer, std::string_view transport) {
  auto meta = std::make_shared<EventMeta>();
  meta->sender = peer.node;
  meta->attempt = static_cast<int>(peer.attempt);
  meta->labels.assign(peer.labels.begin(), peer.labels.end());
  meta->transport = std::string(transport);
  meta->remote = true;
  return meta;
}

Error frame_too_large(std::string_view event, std::size_t size, std::size_t limit, const std::string& whom) {
  if (whom.empty()) {
    return Error("event '" + std::string(event) + "' is " + std::to_string(size) +
                     " bytes, more than --max-frame-bytes (" + std::to_string(limit) + ")",
                 "send smaller events or raise --max-frame-bytes");
  }
  return Error("event '" + std::string(event) + "' is " + std::to_string(size) + " bytes, more than " + whom +
                   " accepts (" + std::to_string(limit) + " bytes, its --max-frame-bytes)",
               "send smaller events or raise --max-frame-bytes on the receiving workers");
}

Error left_just_now(std::string_view event, std::int64_t node, const std::string& whom) {
  return Error("event '" + std::string(event) + "' not sent: node " + std::to_string(node) + " left just now (" +
                   whom + " closed)",
               "a restarted worker gets what is emitted after its hello: wait for ditask.peer_joined to send again");
}

bool interested(const std::optional<std::set<std::string>>& interest, const std::vector<std::string>& always,
                std::string_view name) {
  if (!interest) {
    return true;
  }
  for (const auto& a : always) {
    if (a.ends_with('.') ? name.starts_with(a) : name == a) {
      return true;
    }
  }
  return interest->count(std::string(name)) != 0;
}

}  // namespace ditask::detail
