// SPDX-License-Identifier: MIT
#pragma once
// Small test fixtures shared by the unit and integration tests.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

/// `count` consecutive TCP ports in 30000-32767, for a ditask (or server) that must listen on ports
/// known before its launch (`--ports`). When taken they were free on every address of `hosts`, and
/// they stay reserved until destruction: every test process that needs such ports goes through a
/// lock file per port (flock on /tmp/ditask-test-ports/PORT, whatever TMPDIR says), and the kernel
/// never picks a local port of an outgoing connection there (below ip_local_port_range's default
/// 32768; scripts/slurm/slurm_local.sh keeps to 20000-29999). So nothing takes them in between.
class ReservedPorts {
 public:
  explicit ReservedPorts(int count, const std::vector<std::string>& hosts = {"127.0.0.1"}) {
    static constexpr int kLow = 30000, kHigh = 32767;
    const char* dir = "/tmp/ditask-test-ports";
    ::mkdir(dir, 01777);
    const auto seed = static_cast<unsigned>(::getpid()) * 7919u +
                      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
    const int span = kHigh - kLow + 1 - count;
    for (int tries = 0; tries < span; ++tries) {
      const int base = kLow + static_cast<int>((seed + static_cast<unsigned>(tries) * 97u) % static_cast<unsigned>(span));
      if (take(dir, base, count, hosts)) {
        first = base;
        return;
      }
    }
    FAIL("no " << count << " free consecutive ports in " << kLow << "-" << kHigh);
  }
  ~ReservedPorts() { release(); }
  ReservedPorts(const ReservedPorts&) = delete;
  ReservedPorts& operator=(const ReservedPorts&) = delete;

  /// The first port; the others follow it.
  int first = 0;

 private:
  // Locks base..base+count-1 and checks each binds on every host; on any miss unlocks and says no.
  bool take(const char* dir, int base, int count, const std::vector<std::string>& hosts) {
    for (int port = base; port < base + count; ++port) {
      const int fd = ::open((std::string(dir) + "/" + std::to_string(port)).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
      if (fd < 0) {
        FAIL("cannot open a port lock file in " << dir << ": " << std::strerror(errno));
      }
      locks_.push_back(fd);
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || !bindable(port, hosts)) {
        release();
        return false;
      }
    }
    return true;
  }
  static bool bindable(int port, const std::vector<std::string>& hosts) {
    for (const auto& host : hosts) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<std::uint16_t>(port));
      const bool ok = fd >= 0 && ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1 &&
                      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
      if (fd >= 0) {
        ::close(fd);
      }
      if (!ok) {
        return false;
      }
    }
    return true;
  }
  void release() {
    for (const int fd : locks_) {
      ::close(fd);
    }
    locks_.clear();
  }
  std::vector<int> locks_;
};

/// Holds a TCP port on 127.0.0.1 that is bound but not listening: connecting to it is refused
/// (ECONNREFUSED) for as long as this object lives, and nobody else can start listening there.
struct RefusingPort : BoundPort {
  RefusingPort() : BoundPort(false) {}
};

}  // namespace ditask::test
