// SPDX-License-Identifier: MIT
#pragma once
// Small test fixtures shared by the unit and integration tests.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

namespace ditask::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ditask-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      FAIL("mkdtemp(" << pattern << ") failed: " << std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory.
  const std::string& path() const { return path_; }
  /// path() + "/" + name (nothing is created).
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `content` to file(name) and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::string target = file(name);
    std::ofstream out(target, std::ios::binary);
    out << content;
    out.close();
    REQUIRE(out.good());
    return target;
  }

 private:
  std::string path_;
};

/// A TCP socket bound to a free port on 127.0.0.1, listening or not; closed when destroyed.
class BoundPort {
 public:
  explicit BoundPort(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    if (listening) {
      REQUIRE(::listen(fd, 1) == 0);
    }
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~BoundPort() { ::close(fd); }
  BoundPort(const BoundPort&) = delete;
  BoundPort& operator=(const BoundPort&) = delete;
  int fd = -1;
  int port = 0;
};

/// Holds a listening TCP socket on 127.0.0.1 at a free port, so a test can offer ditask a port
/// that is already in use.
struct PortSquatter : BoundPort {
  PortSquatter() : BoundPort(true) {}
};

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, then released), for a ditask that
/// must listen on a port known in advance (`--ports`). Another process could take it in between;
/// prefer port 0 or PortSquatter wherever the port need not be known before the launch.
inline int free_port() {
  PortSquatter squatter;
  return squatter.port;
}

/// Holds a TCP port on 127.0.0.1 that is bound but not listening: connecting to it is refused
/// (ECONNREFUSED) for as long as this object lives, and nobody else can start listening there.
struct RefusingPort : BoundPort {
  RefusingPort() : BoundPort(false) {}
};

}  // namespace ditask::test
