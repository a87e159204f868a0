// SPDX-License-Identifier: MIT
// Starting workers with posix_spawn: what a worker process finds (fds, group, signals), and a
// start that cannot happen.
#include "spawn_posix.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <system_error>

#include <catch2/catch.hpp>

using ditask::launcher::spawn_worker;
using ditask::launcher::SpawnRequest;

namespace {

std::string read_file(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::string link_of(pid_t pid, int fd) {
  char buf[256];
  const auto path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// The fds a process has open, as "0 1 2 ...".
std::string open_fds(pid_t pid) {
  std::string out;
  for (int fd = 0; fd < 64; ++fd) {
    if (!link_of(pid, fd).empty()) {
      out += std::to_string(fd) + " ";
    }
  }
  return out;
}

// The spawn probe (spawn_probe.cpp) started by spawn_worker, looked at from outside once it said
// from its main() that it started (before that, its dynamic loader may hold a file open as fd 3),
// then killed and reaped.
struct Sleeper {
  explicit Sleeper(int listen_fd) {
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    pid = spawn_worker(SpawnRequest{DITASK_SPAWN_PROBE, {}, {"PATH=/usr/bin:/bin"}, out[1], out[1], listen_fd});
    std::string said;
    char buf[64];
    while (said.find('\n') == std::string::npos) {
      pollfd ready{out[0], POLLIN, 0};
      REQUIRE(::poll(&ready, 1, 20'000) == 1);  // a bound against a hang, not a synchronisation
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      REQUIRE(n > 0);
      said.append(buf, static_cast<std::size_t>(n));
    }
    REQUIRE(said == "started\n");
  }
  ~Sleeper() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out[0]);
    ::close(out[1]);
  }
  std::string status_line(const std::string& key) const {
    const auto text = read_file("/proc/" + std::to_string(pid) + "/status");
    const auto at = text.find(key + ":");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }
  int out[2];
  pid_t pid = -1;
};

}  // namespace

TEST_CASE("spawn: a worker gets stdin from /dev/null, its pipes, the listening socket at fd 3 and nothing else",
          "[launcher][spawn]") {
  const int sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(sock >= 0);
  const int stray = ::open("/dev/null", O_RDONLY);  // not close-on-exec: must still not leak
  REQUIRE(stray >= 0);
  {
    Sleeper child(sock);
    CHECK(open_fds(child.pid) == "0 1 2 3 ");
    CHECK(link_of(child.pid, 0) == "/dev/null");
    CHECK(link_of(child.pid, 3).rfind("socket:", 0) == 0);
    CHECK(link_of(child.pid, 1) == link_of(::getpid(), child.out[1]));
    CHECK(::getpgid(child.pid) == child.pid);  // a process group of its own
    CHECK(child.status_line("SigBlk") == "SigBlk:\t0000000000000000");
  }
  ::close(stray);
  ::close(sock);
}

TEST_CASE("spawn: without a listening socket fd 3 is closed too", "[launcher][spawn]") {
  Sleeper child(-1);
  CHECK(open_fds(child.pid) == "0 1 2 ");
}

TEST_CASE("spawn: signals the launcher ignores are back at their defaults in a worker", "[launcher][spawn]") {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_hup {}, old_pipe {};
  ::sigaction(SIGHUP, &ignore, &old_hup);
  ::sigaction(SIGPIPE, &ignore, &old_pipe);
  std::string ignored;
  {
    Sleeper child(-1);
    ignored = child.status_line("SigIgn");
  }
  ::sigaction(SIGHUP, &old_hup, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  REQUIRE(ignored.size() == std::string("SigIgn:\t0000000000000000").size());
  const unsigned long long mask = std::stoull(ignored.substr(8), nullptr, 16);
  CHECK((mask & (1ULL << (SIGHUP - 1))) == 0);
  CHECK((mask & (1ULL << (SIGPIPE - 1))) == 0);
}

TEST_CASE("spawn: an executable that cannot run is an error naming it, and nothing starts", "[launcher][spawn]") {
  SpawnRequest request{"/nonexistent/ditask", {"--worker"}, {}, STDOUT_FILENO, STDERR_FILENO, -1};
  CHECK_THROWS_WITH(spawn_worker(request), Catch::Contains("cannot execute /nonexistent/ditask"));
}
