// SPDX-License-Identifier: MIT
// Refusals at the hello, seen from both sides: the refusing node logs `refused node N (...): it
// ... we ...` and its start() names `we refused it: ...`; the refused node logs `node M (...)
// refused us: we ... it ...` and its start() names `it refused us: ...`. Every reason: token
// missing, token unexpected, wrong token, run ids, protocol version, duplicate node id.
#include <unistd.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "mesh_fixture.hpp"
#include "stderr_capture.hpp"

using namespace ditask::test::mesh_fixture;
using ditask::test::error_of;
using ditask::test::StderrCapture;

namespace {

/// Node `id`'s name in the other node's log lines: "node <id> (<its listen address>)".
std::string node_name(std::int64_t id, const std::vector<Listener>& nodes) {
  return "node " + std::to_string(id) + " (" + nodes[static_cast<std::size_t>(id)].address + ")";
}

/// Frames a raw client reads until the peer closes the connection (at most 20 s).
std::vector<mesh::Frame> read_until_closed(int fd) {
  mesh::FrameDecoder decoder(1 << 20);
  std::vector<mesh::Frame> frames;
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::uint8_t buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      return frames;
    }
    auto got = decoder.feed({buf, static_cast<std::size_t>(n)});
    frames.insert(frames.end(), got.frames.begin(), got.frames.end());
  }
}

}  // namespace

TEST_CASE("refusal: a token on one side only is refused by both, each in its own words", "[mesh][refusal]") {
  StderrCapture log;
  const std::vector<Listener> nodes{tcp_listener(), tcp_listener()};
  Pair p(nodes, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
    a.token = "token-of-the-job-0123";
    a.startup_timeout = b.startup_timeout = 50s;  // a permanent refusal ends the wait at once
  });
  const auto eb = error_of([&] { p.b->wait_ready(); });
  const auto ea = error_of([&] { p.a->wait_ready(); });
  // Node 0 has the token: node 1 sent none.
  CHECK(log.wait_for("refused " + node_name(1, nodes) +
                     ": it sent no token and we require one (--token or DITASK_TOKEN)"));
  CHECK(log.wait_for(node_name(0, nodes) + " refused us: we sent no token and it requires one"));
  // Node 1 has none: node 0 requires one.
  CHECK(log.wait_for("refused " + node_name(0, nodes) +
                     ": it requires a token and we have none (--token or DITASK_TOKEN)"));
  const bool fourth = log.wait_for(node_name(1, nodes) + " refused us: we require a token and it has none");
  INFO("log:\n" << log.text());  // both nodes' lines, for a failure
  CHECK(fourth);
  CHECK_THAT(eb.what(), Catch::Contains("mesh cannot become ready") &&
                            (Catch::Contains("it refused us: we sent no token and it requires one") ||
                             Catch::Contains("we refused it: it requires a token and we have none")));
  CHECK_THAT(ea.what(), Catch::Contains("mesh cannot become ready") &&
                            (Catch::Contains("we refused it: it sent no token and we require one") ||
                             Catch::Contains("it refused us: we require a token and it has none")));
  CHECK_THAT(log.text(), !Catch::Contains("this node"));
}

TEST_CASE("refusal: a wrong token is refused by the checking side, each in its own words", "[mesh][refusal]") {
  StderrCapture log;
  const std::vector<Listener> nodes{tcp_listener(), tcp_listener()};
  Pair p(nodes, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
    a.token = "token-of-the-job-0123";
    b.token = "another-token-456789";
    a.startup_timeout = b.startup_timeout = 50s;
  });
  const auto eb = error_of([&] { p.b->wait_ready(); });
  const auto ea = error_of([&] { p.a->wait_ready(); });
  // Node 1 dials, so it proves first; node 0 checks the proof and refuses.
  CHECK(log.wait_for("refused " + node_name(1, nodes) + ": its token proof does not match our token"));
  CHECK(log.wait_for(node_name(0, nodes) + " refused us: our token proof does not match its token"));
  CHECK_THAT(eb.what(), Catch::Contains(node_name(0, nodes) +
                                        ": it refused us: our token proof does not match its token"));
  CHECK_THAT(ea.what(), Catch::Contains(node_name(1, nodes) +
                                        ": we refused it: its token proof does not match our token"));
}

TEST_CASE("refusal: explicit run ids that differ, each in its own words", "[mesh][refusal]") {
  StderrCapture log;
  const std::vector<Listener> nodes{tcp_listener(), tcp_listener()};
  Pair p(nodes, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
    a.run_id = "job-a";
    b.run_id = "job-b";
    a.run_id_explicit = b.run_id_explicit = true;
    a.startup_timeout = b.startup_timeout = 50s;
  });
  const auto eb = error_of([&] { p.b->wait_ready(); });
  const auto ea = error_of([&] { p.a->wait_ready(); });
  CHECK(log.wait_for("refused " + node_name(1, nodes) + ": its run id 'job-b' differs from ours 'job-a'"));
  CHECK(log.wait_for(node_name(0, nodes) + " refused us: our run id 'job-b' differs from its run id 'job-a'"));
  CHECK(log.wait_for("refused " + node_name(0, nodes) + ": its run id 'job-a' differs from ours 'job-b'"));
  const bool fourth = log.wait_for(node_name(1, nodes) + " refused us: our run id 'job-a' differs from its run id 'job-b'");
  INFO("log:\n" << log.text());
  CHECK(fourth);
  CHECK_THAT(eb.what(), Catch::Contains("mesh cannot become ready") && Catch::Contains("'job-a'") && Catch::Contains("'job-b'"));
  CHECK_THAT(ea.what(), Catch::Contains("mesh cannot become ready") && Catch::Contains("'job-a'") && Catch::Contains("'job-b'"));
}

TEST_CASE("refusal: another protocol version, in the refuser's log and in the bye it sends", "[mesh][refusal]") {
  StderrCapture log;
  const std::vector<Listener> nodes{tcp_listener()};
  Inbox inbox(true);
  mesh::Mesh m(settings_for(0, nodes));
  m.attach(inbox.sink());
  m.start();
  const int fd = join_raw(nodes[0].address, 5, 1);  // a build of wire version 1
  const auto frames = read_until_closed(fd);
  ::close(fd);
  std::optional<mesh::Bye> bye;
  for (const auto& f : frames) {
    if (f.type == mesh::FrameType::bye) {
      bye = mesh::decode_bye(f.payload);
    }
  }
  REQUIRE(bye);
  CHECK(bye->reason == "it speaks protocol version 1, we speak 2");
  CHECK(bye->you == "we speak protocol version 1, it speaks 2");
  CHECK(bye->permanent);
  CHECK(log.wait_for(": it speaks protocol version 1, we speak 2"));
  m.shutdown();
  inbox.clear();
}

TEST_CASE("refusal: a second node with a connected node's id, each in its own words", "[mesh][refusal]") {
  StderrCapture log;
  std::vector<Listener> nodes{tcp_listener(), tcp_listener(), tcp_listener()};
  Pair p({nodes[0], nodes[1]}, true);
  p.b->wait_ready();
  // A third process that claims node id 1 too, dialling node 0.
  auto s = settings_for(1, {nodes[0], nodes[2]});
  s.startup_timeout = 1s;
  mesh::Mesh c(s);
  c.start();
  const auto ec = error_of([&] { c.wait_ready(); });
  const std::string was = "(attempt 0, " + nodes[1].address + ")";
  CHECK(log.wait_for("refused node 1 (" + nodes[2].address + "): duplicate node id 1: node 1 is already connected " + was));
  CHECK(log.wait_for(node_name(0, nodes) + " refused us: duplicate node id 1: another node 1 is already connected to it " + was));
  CHECK_THAT(ec.what(), Catch::Contains("mesh not ready") &&
                            Catch::Contains("it refused us: duplicate node id 1: another node 1 is already connected to it"));
  c.shutdown();
}
