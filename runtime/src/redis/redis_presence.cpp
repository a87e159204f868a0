// SPDX-License-Identifier: MIT
#include "redis_presence.hpp"

#include <nlohmann/json.hpp>

namespace ditask::detail::redis {

namespace {

void put_interest(nlohmann::json& message, const PeerInterest& interest) {
  message["topics"] = nullptr;
  if (interest.names) {
    message["topics"] = *interest.names;
  }
  message["iv"] = interest.version;
}

}  // namespace

bool PeerInterest::offer(std::uint64_t change, std::optional<std::set<std::string>> what) {
  if (change < version) {
    return false;
  }
  version = change;
  names = std::move(what);
  return true;
}

std::string hello_text(const PeerRecord& self, const PeerInterest& interest) {
  nlohmann::json hello = {{"node", self.node}, {"attempt", self.attempt}, {"instance", self.instance}, {"labels", self.labels}};
  if (self.world_size > 0) {
    hello["world"] = self.world_size;
  }
  put_interest(hello, interest);
  return hello.dump();
}

std::string interest_notice_text(std::int64_t node, std::uint64_t instance, const PeerInterest& interest) {
  nlohmann::json notice = {{"interest", true}, {"node", node}, {"instance", instance}};
  put_interest(notice, interest);
  return notice.dump();
}

PresenceMessage parse_presence(std::string_view text) {
  PresenceMessage m;
  const auto j = nlohmann::json::parse(text);
  m.peer.node = j.at("node").get<std::int64_t>();
  m.peer.instance = j.at("instance").get<std::uint64_t>();
  if (j.contains("topics") && !j["topics"].is_null()) {
    m.interest.names = j["topics"].get<std::set<std::string>>();
  }
  m.interest.version = j.value("iv", std::uint64_t{0});
  m.notice = j.contains("interest");
  if (!m.notice) {
    m.peer.attempt = j.at("attempt").get<std::int64_t>();
    m.peer.labels = j.at("labels").get<std::set<std::string>>();
    m.peer.world_size = j.value("world", std::int64_t{0});
  }
  return m;
}

}  // namespace ditask::detail::redis
