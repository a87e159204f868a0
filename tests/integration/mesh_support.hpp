// SPDX-License-Identifier: MIT
#pragma once
// Helpers of the mesh integration tests (mesh_*_test.cpp): arguments for the mesh_tests module
// (plugins/mesh_tests), its "[node N] RESULT ..." lines, and a raw TCP client for hostile input.

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <dirent.h>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/types.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "redis_server.hpp"
#include "run_ditask.hpp"

namespace ditask::test::mesh {

/// `--package <module> --main <entry> --parallel-workers <workers>` plus `more`.
/// Volume tests move a tenth of their data under ThreadSanitizer and a third under ASan, and
/// repeated runs repeat as often fewer times: there every fresh page costs shadow memory (60
/// events of 1 MiB took 12 s under TSan on a 2-core VM, half of it in page faults), and a race
/// or a memory error shows on the first pass of a path. The Debug build moves the full volume.
#if defined(__SANITIZE_THREAD__)
inline constexpr long kVolumeDivisor = 10;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr long kVolumeDivisor = 3;
#else
inline constexpr long kVolumeDivisor = 1;
#endif

inline std::vector<std::string> module_args(const std::string& module, const std::string& entry, int workers,
                                            std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--package", module_path(module), "--main",
                                   entry,       "--parallel-workers", std::to_string(workers)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// module_args() of the mesh_tests module.
inline std::vector<std::string> mesh_args(const std::string& entry, int workers,
                                          std::vector<std::string> more = {}) {
  return module_args("mesh_tests", entry, workers, std::move(more));
}

/// One transport the event-semantics tests run over: "mesh" (TCP), or "redis" with a
/// redis-server of the test's own for as long as this object lives. Every test that states
/// event semantics, not sockets, runs over both (GENERATE(as<std::string>{}, "mesh", "redis")).
class Over {
 public:
  explicit Over(const std::string& transport) : name_(transport) {
    if (transport == "redis") {
      redis_ = std::make_unique<RedisServer>();
    }
  }
  /// "mesh" or "redis", as EventMeta::transport names it.
  const std::string& name() const { return name_; }
  /// The server over "redis", else null.
  RedisServer* redis() const { return redis_.get(); }
  /// `args` with this transport's options put before the module arguments ("--").
  std::vector<std::string> args(std::vector<std::string> args) const {
    if (redis_) {
      const auto at = std::find(args.begin(), args.end(), std::string("--"));
      args.insert(at, {"--mq-type", "redis", "--redis-port", redis_->port_text()});
    }
    return args;
  }

 private:
  std::string name_;
  std::unique_ptr<RedisServer> redis_;
};

/// The text after "[node <node>] <tag> " of every such stdout line, in order.
inline std::vector<std::string> tagged(const std::string& out, long node, const std::string& tag) {
  const std::string prefix = "[node " + std::to_string(node) + "] " + tag + " ";
  std::vector<std::string> found;
  for (const auto& line : split_lines(out)) {
    if (line.rfind(prefix, 0) == 0) {
      found.push_back(line.substr(prefix.size()));
    }
  }
  return found;
}

/// The one RESULT line of `node` (without its prefix), or "<N RESULT lines>" when there is not
/// exactly one, so a CHECK against the expected text shows what went wrong.
inline std::string result_of(const std::string& out, long node) {
  auto lines = tagged(out, node, "RESULT");
  return lines.size() == 1 ? lines[0] : "<" + std::to_string(lines.size()) + " RESULT lines>";
}

/// The value of `key=value` in a space-separated line, or "<missing>".
inline std::string field(const std::string& line, const std::string& key) {
  const std::string marker = key + "=";
  for (std::size_t pos = line.find(marker); pos != std::string::npos;
       pos = line.find(marker, pos + 1)) {
    if (pos == 0 || line[pos - 1] == ' ') {
      const auto begin = pos + marker.size();
      const auto end = line.find(' ', begin);
      return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    }
  }
  return "<missing>";
}

/// The port of "tcp://127.0.0.1:<port>" (0 when `url` is not of that form).
inline int tcp_port(const std::string& url) {
  const std::string prefix = "tcp://127.0.0.1:";
  return url.rfind(prefix, 0) == 0 ? std::atoi(url.c_str() + prefix.size()) : 0;
}

/// Case-insensitive substring test (log wording may capitalise).
inline bool contains_nocase(const std::string& text, const std::string& needle) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  return lower(text).find(lower(needle)) != std::string::npos;
}

/// Waits until every thread of `pid` is in the stopped state after a SIGSTOP (kill() returns
/// before the target has stopped). Polls /proc, which has no notification, in 1 ms slices.
inline bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (;;) {
    bool all = true;
    DIR* dir = ::opendir(tasks.c_str());
    if (dir == nullptr) {
      return false;
    }
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') {
        continue;
      }
      std::ifstream stat(tasks + "/" + entry->d_name + "/stat");
      std::string content;
      std::getline(stat, content);
      const auto paren = content.rfind(')');
      const char state =
          paren != std::string::npos && paren + 2 < content.size() ? content[paren + 2] : '?';
      all = all && (state == 'T' || state == 't');
    }
    ::closedir(dir);
    if (all) {
      return true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Frame types of the wire format (README "Mesh wire format"; runtime/src/mesh/frame.hpp).
enum class WireType : std::uint8_t { hello = 1, event = 2, unknown = 0x7f };

/// A 32-byte frame header written by hand: magic "DTSK", version 2, `type`, flags 0, sender 0,
/// sequence 0, topic length `topic_bytes`, reserved 0, payload length `payload_bytes`.
inline std::string frame_header(WireType type, std::uint32_t payload_bytes,
                                std::uint16_t topic_bytes = 0) {
  std::string h(32, '\0');
  h.replace(0, 4, "DTSK");
  h[4] = 2;
  h[5] = static_cast<char>(type);
  const std::uint32_t topic = topic_bytes;
  for (unsigned i = 0; i < 2; ++i) {
    h[24 + i] = static_cast<char>((topic >> (8 * i)) & 0xffU);
  }
  for (unsigned i = 0; i < 4; ++i) {
    h[28 + i] = static_cast<char>((payload_bytes >> (8 * i)) & 0xffU);
  }
  return h;
}

/// A plain TCP client of a worker's listen port, playing a hostile peer.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    local_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  /// Our end's address as the worker sees it, "127.0.0.1:<port>".
  const std::string& local_address() const { return local_; }
  /// Writes all of `bytes`; false when the worker already closed the connection.
  bool send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        return false;
      }
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  /// Ends our sending direction (the worker reads EOF).
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  /// Reads (and discards) until the worker closes the connection; false after `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        continue;
      }
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        return true;
      }
    }
  }

 private:
  int fd_ = -1;
  std::string local_;
};

}  // namespace ditask::test::mesh
