// SPDX-License-Identifier: MIT
// A star's relay as each worker sees it, without sockets.
#include <catch2/catch.hpp>

#include "mesh/relay_plan.hpp"

namespace {

using ditask::detail::mesh::MeshSettings;
using ditask::detail::mesh::RelayPlan;

// Worker `local` of a launcher whose 4 workers are nodes 10..13 (local 0 is node 10).
MeshSettings star_worker(std::int64_t local, bool relay, const std::string& topology = "star") {
  MeshSettings s;
  s.topology = topology;
  s.relay = relay;
  s.local_id = local;
  s.node_id = 10 + local;
  for (std::int64_t i = 0; i < 4; ++i) {
    s.local_nodes.push_back({10 + i, i, "tcp://127.0.0.1:" + std::to_string(9000 + i)});
  }
  return s;
}

}  // namespace

TEST_CASE("relay plan: a spoke of a relaying star reaches other spokes through the hub", "[relay][unit]") {
  const RelayPlan spoke(star_worker(2, true));
  CHECK_FALSE(spoke.is_hub());
  CHECK_FALSE(spoke.hub_relays());
  CHECK(spoke.hub_for(13, false) == 10);
  CHECK_FALSE(spoke.hub_for(13, true));   // a direct peer after all
  CHECK_FALSE(spoke.hub_for(10, true));   // the hub itself is a peer
  CHECK_FALSE(spoke.hub_for(12, false));  // itself
  CHECK_FALSE(spoke.hub_for(99, false));  // outside this launcher's job
  CHECK_FALSE(spoke.spoke_without_relay());
}

TEST_CASE("relay plan: the hub relays, and relays for nobody's hub", "[relay][unit]") {
  const RelayPlan hub(star_worker(0, true));
  CHECK(hub.is_hub());
  CHECK(hub.hub_relays());
  CHECK_FALSE(hub.hub_for(12, false));
}

TEST_CASE("relay plan: without --relay, or in a full mesh, nothing is relayed", "[relay][unit]") {
  const RelayPlan spoke(star_worker(1, false));
  CHECK(spoke.spoke_without_relay());
  CHECK_FALSE(spoke.hub_for(13, false));
  const RelayPlan hub(star_worker(0, false));
  CHECK(hub.is_hub());
  CHECK_FALSE(hub.hub_relays());
  CHECK_FALSE(hub.spoke_without_relay());
  const RelayPlan mesh(star_worker(0, true, "mesh"));
  CHECK_FALSE(mesh.is_hub());
  CHECK_FALSE(mesh.hub_relays());
  CHECK_FALSE(RelayPlan(star_worker(2, true, "mesh")).hub_for(13, false));
}

TEST_CASE("relay plan: the hint for a node a spoke cannot reach names --relay only where it would help",
          "[relay][unit]") {
  const std::string relay = "spokes of a star reach each other only through a relaying hub (--relay)";
  const std::string other = "node 99 is a worker of another launcher, and a hub relays only among its own "
                            "launcher's workers: dial it with --attach-to";
  CHECK(RelayPlan(star_worker(2, false)).unreachable_hint(13) == relay);
  CHECK(RelayPlan(star_worker(2, false)).unreachable_hint(99) == other);
  CHECK(RelayPlan(star_worker(2, true)).unreachable_hint(99) == other);  // --relay is on: not the cure
  CHECK(RelayPlan(star_worker(0, true)).unreachable_hint(99).empty());   // the hub: not a spoke
  CHECK(RelayPlan(star_worker(2, false, "mesh")).unreachable_hint(99).empty());
}
