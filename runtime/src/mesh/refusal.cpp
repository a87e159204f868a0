// SPDX-License-Identifier: MIT
#include "refusal.hpp"

#include "hello.hpp"

namespace ditask::detail::mesh::refusal {

namespace {
constexpr const char* kTokenHint = " (--token or DITASK_TOKEN)";
}  // namespace

Refusal version(std::uint32_t theirs, std::uint32_t ours) {
  const auto t = std::to_string(theirs);
  const auto o = std::to_string(ours);
  return {"it speaks protocol version " + t + ", we speak " + o,
          "we speak protocol version " + t + ", it speaks " + o, true};
}

Refusal ourselves() { return {"a hello from ourselves", "a hello from ourselves", false}; }

Refusal run_id(const std::string& theirs, const std::string& ours) {
  const auto t = printable(theirs, kMaxRunIdBytes);
  const auto o = printable(ours, kMaxRunIdBytes);
  return {"its run id '" + t + "' differs from ours '" + o + "'",
          "our run id '" + t + "' differs from its run id '" + o + "'", true};
}

Refusal world_size(std::int64_t theirs, std::int64_t ours) {
  const auto t = std::to_string(theirs);
  const auto o = std::to_string(ours);
  Refusal r{"its job has " + t + " workers (--world-size), ours " + o,
            "our job has " + t + " workers (--world-size), its " + o, true};
  r.fails_both = true;
  return r;
}

Refusal own_node_id(std::int64_t id) {
  const auto n = std::to_string(id);
  return {"duplicate node id " + n + ": it has our own node id",
          "duplicate node id " + n + ": we have its own node id", false};
}

Refusal duplicate_node(std::int64_t id, std::int64_t attempt, const std::string& listen) {
  const auto n = std::to_string(id);
  const auto was = " (attempt " + std::to_string(attempt) + ", " + listen + ")";
  return {"duplicate node id " + n + ": node " + n + " is already connected" + was,
          "duplicate node id " + n + ": another node " + n + " is already connected to it" + was, false};
}

Refusal token_unexpected() {
  return {std::string("it requires a token and we have none") + kTokenHint,
          std::string("we require a token and it has none") + kTokenHint, true};
}

Refusal token_missing() {
  return {std::string("it sent no token and we require one") + kTokenHint,
          std::string("we sent no token and it requires one") + kTokenHint, true};
}

Refusal wrong_token() {
  return {std::string("its token proof does not match our token") + kTokenHint,
          std::string("our token proof does not match its token") + kTokenHint, true};
}

Refusal nonce_replayed() { return {"it replayed our nonce", "we replayed its nonce", false}; }

Refusal unexpected_auth() { return {"an unexpected auth frame", "we sent an unexpected auth frame", false}; }

Refusal second_hello() { return {"a second hello", "we sent a second hello", false}; }

}  // namespace ditask::detail::mesh::refusal

namespace ditask::detail::mesh {

std::optional<Refusal> hello_refusal(const Hello& mine, const Hello& theirs) {
  if (theirs.version != mine.version) {
    return refusal::version(theirs.version, mine.version);
  }
  if (theirs.instance == mine.instance) {
    return refusal::ourselves();
  }
  if (mine.run_id_explicit && theirs.run_id_explicit && theirs.run_id != mine.run_id) {
    return refusal::run_id(theirs.run_id, mine.run_id);
  }
  if (mine.world_size > 0 && theirs.world_size > 0 && theirs.world_size != mine.world_size) {
    return refusal::world_size(theirs.world_size, mine.world_size);
  }
  return std::nullopt;
}

}  // namespace ditask::detail::mesh
