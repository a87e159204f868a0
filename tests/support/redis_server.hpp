// SPDX-License-Identifier: MIT
#pragma once
// A real redis-server of the test's own: on a loopback port reserved for it (ReservedPorts), in a
// temporary directory, without persistence, stopped (and restartable on the same port) by the
// test. Needs redis-server on PATH (scripts/test.sh installs the redis-server package).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"

extern char** environ;

namespace ditask::test {

class RedisServer {
 public:
  /// Starts one; `password` (when not empty) is its requirepass; `config` more options (e.g.
  /// {"--client-output-buffer-limit", "pubsub 8mb 8mb 0"}). REQUIREs that it answers.
  explicit RedisServer(std::string password = {}, std::vector<std::string> config = {})
      : password_(std::move(password)), config_(std::move(config)) {
    for (int tries = 0; tries < 5 && pid_ <= 0; ++tries) {
      reserved_ = std::make_unique<ReservedPorts>(1);  // held while it lives: restart() reuses it
      start();
    }
    REQUIRE(pid_ > 0);
  }
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return reserved_->first; }
  std::string port_text() const { return std::to_string(port()); }
  /// Kills it (SIGKILL: what it held is gone, as in a crash) and waits for it to exit.
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }
  /// Starts it again on the same port (empty: no keys, no subscribers). REQUIREs that it answers.
  void restart() {
    stop();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pid_ <= 0 && std::chrono::steady_clock::now() < deadline) {
      start();  // the port may linger for a moment after the kill
      if (pid_ <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    REQUIRE(pid_ > 0);
  }

  /// Sends one inline command (e.g. "CLIENT LIST") and returns its reply's text: a bulk
  /// string's contents, or the status/error line. Without a password only.
  std::string ask(const std::string& command) const {
    const int fd = connect_to_it();
    std::string in;
    const std::string line = command + "\r\n";
    if (fd >= 0 && ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
      char buf[4096];
      std::size_t need = 0;  // bytes of the whole reply, once its first line is in
      while (need == 0 || in.size() < need) {
        const auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
          break;
        }
        in.append(buf, static_cast<std::size_t>(n));
        if (const auto eol = in.find("\r\n"); need == 0 && eol != std::string::npos) {
          need = in[0] == '$' ? eol + 2 + std::stoul(in.substr(1, eol - 1)) + 2 : eol + 2;
        }
      }
      const auto eol = in.find("\r\n");
      if (eol != std::string::npos) {
        in = in[0] == '$' ? in.substr(eol + 2, need - eol - 4) : in.substr(1, eol - 1);
      }
    }
    if (fd >= 0) {
      ::close(fd);
    }
    return in;
  }

 private:
  // A connected socket to it, or -1.
  int connect_to_it() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port()));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  // Spawns redis-server and waits until it answers a PING, or until it exits (pid_ stays -1).
  void start() {
    std::vector<std::string> args = {"redis-server", "--port", port_text(), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", dir_.path(),
                                     "--logfile", dir_.file("redis.log"), "--daemonize", "no"};
    if (!password_.empty()) {
      args.insert(args.end(), {"--requirepass", password_});
    }
    args.insert(args.end(), config_.begin(), config_.end());
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawnp(&pid, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) {
      FAIL("cannot start redis-server (install the redis-server package)");
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        return;  // it exited: most likely the port was taken meanwhile
      }
      if (answers()) {
        pid_ = pid;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL("redis-server on port " << port() << " did not answer within 30 s");
  }
  // True when something on the port answers "PING" the way Redis does.
  bool answers() const {
    const int fd = connect_to_it();
    bool ok = false;
    if (fd >= 0 && ::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6) {
      char reply[64] = {};
      const auto n = ::recv(fd, reply, sizeof reply - 1, 0);
      ok = n > 0 && (reply[0] == '+' || reply[0] == '-');  // +PONG, or -NOAUTH with a password
    }
    if (fd >= 0) {
      ::close(fd);
    }
    return ok;
  }

  std::string password_;
  std::vector<std::string> config_;
  TempDir dir_;
  std::unique_ptr<ReservedPorts> reserved_;  // its port
  pid_t pid_ = -1;
};

}  // namespace ditask::test
