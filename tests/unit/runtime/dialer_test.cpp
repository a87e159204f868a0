// SPDX-License-Identifier: MIT
// The mesh's dialer and listener: the backoff between failed dials (no sockets), and one dial
// to a listener over a Unix socket in a temporary directory (no network).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "mesh/dialer.hpp"
#include "mesh/listener.hpp"
#include "ditask/error.hpp"

using ditask::detail::mesh::dial_address;
using ditask::detail::mesh::Listener;
using ditask::detail::mesh::next_dial_backoff;
using std::chrono::milliseconds;

TEST_CASE("dialer: the wait after a failed dial starts at 20 ms and doubles to at most 1 s", "[mesh][dialer]") {
  milliseconds wait{0};
  std::vector<long> waits;
  for (int i = 0; i < 9; ++i) {
    wait = next_dial_backoff(wait);
    waits.push_back(static_cast<long>(wait.count()));
  }
  CHECK(waits == std::vector<long>{20, 40, 80, 160, 320, 640, 1000, 1000, 1000});
  CHECK(next_dial_backoff(milliseconds(5)) == milliseconds(20));
}

TEST_CASE("dialer: a dial reaches a listener, and one to a path nobody listens on fails with the reason",
          "[mesh][dialer]") {
  ditask::test::TempDir dir;
  boost::asio::io_context io;
  Listener listener(io);
  const std::string address = "ipc://" + dir.file("mesh.sock");
  listener.open(address, -1);
  REQUIRE(listener.is_open());
  std::optional<std::string> accepted;
  bool accepted_tcp = true;
  listener.start([&](Listener::Socket, std::string peer, bool tcp) {
    accepted = peer;
    accepted_tcp = tcp;
    listener.close();
  });
  std::optional<bool> dialled_tcp;
  std::optional<std::string> failed;
  dial_address(
      io, address, {}, [&](boost::asio::generic::stream_protocol::socket, bool tcp) { dialled_tcp = tcp; },
      [&](const std::string& why) { failed = why; });
  std::optional<std::string> nobody;
  dial_address(
      io, "ipc://" + dir.file("nobody.sock"), {}, [&](boost::asio::generic::stream_protocol::socket, bool) {},
      [&](const std::string& why) { nobody = why; });
  io.run();
  CHECK(dialled_tcp == false);
  CHECK_FALSE(failed);
  CHECK(accepted == std::string("a local (ipc) peer"));
  CHECK_FALSE(accepted_tcp);
  REQUIRE(nobody);
  CHECK_FALSE(nobody->empty());
  listener.unlink_path();
  CHECK_FALSE(std::filesystem::exists(dir.file("mesh.sock")));
}

TEST_CASE("listener: a descriptor that is not a socket is an error naming it", "[mesh][dialer][bad-input]") {
  ditask::test::TempDir dir;
  const std::string path = dir.file("plain");
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  boost::asio::io_context io;
  Listener listener(io);
  CHECK_THROWS_WITH(listener.open("tcp://127.0.0.1:1", fd),
                    Catch::Matchers::Contains("DITASK_LISTEN_FD=" + std::to_string(fd) + " is not a socket"));
  CHECK_FALSE(listener.is_open());
  ::close(fd);
}
