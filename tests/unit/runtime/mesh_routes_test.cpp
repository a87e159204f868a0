// SPDX-License-Identifier: MIT
// The mesh's route table under change: emitting threads read it without the mesh's lock while the
// io thread publishes a new one for every peer that joins or leaves.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh_fixture.hpp"
#include "mesh/mesh.hpp"
#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
using namespace ditask::test::mesh_fixture;

TEST_CASE("mesh: sends from another thread while peers join and leave share the route table without a race",
          "[mesh][routes]") {
  // Every join and every leave publishes a new table while the sending thread reads the one it
  // found; under ThreadSanitizer a table read and replaced without ordering is reported here.
  const std::vector<Listener> nodes{tcp_listener()};
  Inbox inbox(true);
  mesh::Mesh m(settings_for(0, nodes));
  m.attach(inbox.sink());
  m.start();
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0};
  std::thread sender([&] {
    while (!stop.load()) {
      m.send(mesh::SendTarget::all(), "task.tick", ditask::EventArgs::from(1));
      sent.fetch_add(1);
    }
  });
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t before = sent.load();
    const int fd = join_raw(nodes[0].address, 10 + round);
    REQUIRE(inbox.wait_for("ditask.peer_joined", static_cast<std::size_t>(round + 1)).size() ==
            static_cast<std::size_t>(round + 1));
    while (sent.load() < before + 2) {  // the sender read this table (a send ends after its routing)
      std::this_thread::yield();
    }
    ::close(fd);
    REQUIRE(inbox.wait_for("ditask.peer_left", static_cast<std::size_t>(round + 1)).size() ==
            static_cast<std::size_t>(round + 1));
  }
  stop = true;
  sender.join();
  CHECK(sent.load() >= 2 * kRounds);
  const auto left = inbox.wait_for("ditask.peer_left", kRounds);
  REQUIRE(left.size() == kRounds);
  for (int round = 0; round < kRounds; ++round) {
    CHECK(left[static_cast<std::size_t>(round)].unpacked().named().get<std::int64_t>("node_id") == 10 + round);
  }
  m.shutdown();
  inbox.clear();
}
