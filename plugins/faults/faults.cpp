// SPDX-License-Identifier: MIT
// Workers that fail in every way the launcher must report: signals, exit codes, exceptions,
// hangs, floods of output, last words on stderr, failures on one node or one attempt.
// Numbers come from the module arguments: `ditask --package faults --main exit_code -- 3`.
#include <algorithm>
#include <atomic>
#include <memory>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ditask/ditask.hpp>

namespace {

std::int64_t node_id() { return ditask::task().router().node_id(); }

// This worker's DITASK_ATTEMPT as the launcher set it ("0" when unset).
std::string attempt_text() {
  const char* attempt = std::getenv("DITASK_ATTEMPT");
  return attempt != nullptr ? attempt : "0";
}

// The first module argument as an integer, or `fallback` when there is none.
std::int64_t first_arg(std::int64_t fallback) {
  const auto& args = ditask::args();
  return args.empty() ? fallback : std::stoll(args.front());
}

// Until a signal with a default action (SIGTERM, SIGKILL) ends the process.
[[noreturn]] void block_forever() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

// Dies by `sig` even when a sanitizer installed its own handler for it.
[[noreturn]] void die_by(int sig) {
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  std::abort();
}

}  // namespace

DITASK_MAIN(segv) { die_by(SIGSEGV); }

DITASK_MAIN(kill_self) { die_by(SIGKILL); }

// Exits with args()[0] (default 7) without returning to the runtime.
DITASK_MAIN(exit_code) { std::exit(static_cast<int>(first_arg(7))); }

DITASK_MAIN(throw_error) {
  throw std::runtime_error("boom from node " + std::to_string(node_id()));
}

DITASK_MAIN(hang) { block_forever(); }

// Prints args()[0] (default 20000) lines of about 90 bytes as fast as stdio allows.
DITASK_MAIN(spam) {
  const std::int64_t lines = first_arg(20000);
  const std::string tail = " " + std::string(64, 'x') + "\n";
  const std::string head = "node " + std::to_string(node_id()) + " line ";
  for (std::int64_t i = 0; i < lines; ++i) {
    const std::string line = head + std::to_string(i) + tail;
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  std::fflush(stdout);
}

DITASK_MAIN(stderr_then_die) {
  for (int k = 1; k <= 3; ++k) {
    std::fprintf(stderr, "last words %d\n", k);
  }
  std::fflush(stderr);
  die_by(SIGABRT);
}

// Throws on node args()[0] (default 1); the other nodes wait until they are stopped.
DITASK_MAIN(fail_on_node) {
  if (node_id() == first_arg(1)) {
    throw std::runtime_error("failing on purpose on node " + std::to_string(node_id()));
  }
  block_forever();
}

// Throws on node args()[0] (default 0) in attempt 0 only; every other run succeeds at once.
DITASK_MAIN(fail_first_attempt) {
  const std::string attempt = attempt_text();
  if (node_id() == first_arg(0) && attempt == "0") {
    throw std::runtime_error("failing attempt 0 on node " + std::to_string(node_id()));
  }
  std::cout << "node " << node_id() << " attempt " << attempt << " ok" << std::endl;
}

// Prints "ready" once it listens; succeeds when SIGUSR1 arrives as an event within 60 s.
DITASK_MAIN(usr1_event) {
  auto& task = ditask::task();
  auto running = task.start();
  task.on("SIGUSR1",
          [](const ditask::EventArgs&) { std::cout << "got SIGUSR1 event" << std::endl; });
  auto waiter = task.waiter("SIGUSR1");
  std::cout << "ready" << std::endl;
  if (!waiter.wait(std::chrono::seconds(60))) {
    throw std::runtime_error("no SIGUSR1 event within 60 s");
  }
}

// Returns at once (the launch benchmark's module).
DITASK_MAIN(noop) {}

// Dies by SIGSEGV on node args()[0] (default 1); the other nodes wait until they are stopped.
DITASK_MAIN(segv_on_node) {
  if (node_id() == first_arg(1)) {
    die_by(SIGSEGV);
  }
  block_forever();
}

// Prints "ready pid=<pid>" once running, then waits until it is stopped (tests collect the pids).
DITASK_MAIN(hang_ready) {
  std::cout << "ready pid=" << ::getpid() << std::endl;
  block_forever();
}

// Node 0 emits args()[0] (default 10) "tick" events once every peer is connected; each other
// node prints "got N ticks pid=<pid>" when it has them all, node 0 "sent N ticks"; then every node waits
// until it is stopped (no SIGTERM handler: the signal's default action ends it).
DITASK_MAIN(ticks_then_hang) {
  const std::int64_t count = first_arg(10);
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() == 0) {
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit("tick", i);
    }
    std::cout << "sent " << count << " ticks" << std::endl;
  } else {
    auto got = std::make_shared<std::atomic<std::int64_t>>(0);
    task.on("tick", [got, count](std::int64_t) {
      if (++*got == count) {
        std::cout << "got " << count << " ticks pid=" << ::getpid() << std::endl;
      }
    });
  }
  block_forever();
}

namespace {

// Writes "ignored SIGINT" / "ignored SIGTERM" (async-signal-safe) and carries on.
extern "C" void note_ignored(int sig) {
  const char* text = sig == SIGINT ? "ignored SIGINT\n" : "ignored SIGTERM\n";
  const auto saved = errno;
  [[maybe_unused]] auto written = ::write(STDOUT_FILENO, text, std::strlen(text));
  errno = saved;
}

}  // namespace

// Ignores SIGINT and SIGTERM (printing "ignored SIGINT"/"ignored SIGTERM" for each), prints
// "ready pid=<pid>" and waits: only SIGKILL stops it (the second-Ctrl-C escalation test).
DITASK_MAIN(ignore_int_ready) {
  struct sigaction action {};
  action.sa_handler = note_ignored;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::cout << "ready pid=" << ::getpid() << std::endl;
  block_forever();
}

// Node 0 leaves an orphan behind: a grandchild (double fork) that prints "orphan pid=<pid>" and
// exits once node 0 is gone (its end of a pipe closes), so the launcher, its subreaper (or the PID
// 1 of a container), must reap it; node 0 then returns. The other nodes print "ready" and wait to
// be stopped.
DITASK_MAIN(orphan_then_hang) {
  if (node_id() != 0) {
    std::cout << "ready pid=" << ::getpid() << std::endl;
    block_forever();
  }
  int gone[2];
  if (::pipe(gone) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::cout.flush();
  const pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {  // the grandchild: reparented to the subreaper once its parent exits
      ::close(gone[1]);
      std::printf("orphan pid=%d\n", static_cast<int>(::getpid()));
      std::fflush(stdout);
      char byte = 0;
      [[maybe_unused]] const auto n = ::read(gone[0], &byte, 1);  // EOF when node 0 has exited
      ::_exit(0);
    }
    ::_exit(0);
  }
  ::close(gone[0]);
  int status = 0;
  ::waitpid(child, &status, 0);  // the intermediate child is ours to reap; the grandchild is not
}

namespace {

// Milliseconds from now until `deadline` (0 once it passed).
int ms_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

// A socket connected to 127.0.0.1:port, or -1 with errno set (ETIMEDOUT when nothing answered by
// `deadline`, as when a listener that never accepts has a full backlog).
int dial(int port, std::chrono::steady_clock::time_point deadline) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  int err = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    err = ETIMEDOUT;
    if (::poll(&p, 1, ms_until(deadline)) == 1) {
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  if (err != 0) {
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// Dials 127.0.0.1:port until it is refused (true), or until `deadline` with a connection still
// accepted (false). A connection the kernel queues for a listener nobody accepts on is reset when
// that listener closes, and the next dial is refused. The reset may also end a dial still in
// progress (ECONNRESET): that dial is made again, like one that timed out.
bool until_refused(int port, std::chrono::steady_clock::time_point deadline) {
  while (ms_until(deadline) > 0) {
    const int fd = dial(port, deadline);
    if (fd < 0 && errno == ECONNREFUSED) {
      return true;
    }
    if (fd < 0 && errno != ETIMEDOUT && errno != ECONNRESET) {
      std::cout << "RESULT dial failed: " << std::strerror(errno) << std::endl;
      std::exit(1);
    }
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};  // wakes when the connection is reset (or at the deadline)
      ::poll(&p, 1, ms_until(deadline));
      ::close(fd);
    }
  }
  return false;
}

// The port of node 0 (DITASK_ATTACH_TO of node 1: tcp://127.0.0.1:PORT).
int node0_port() {
  const std::string address = std::getenv("DITASK_ATTACH_TO");
  return std::stoi(address.substr(address.rfind(':') + 1));
}

}  // namespace

// Node 0 returns at once (exit 0: never restarted). Node 1 dials node 0's address until it is
// refused: its launcher closed it. Prints "RESULT refused"; after 30 s with a connection still
// held it prints "RESULT still accepted" and exits 1.
DITASK_MAIN(dial_finished_peer) {
  if (node_id() == 0) {
    return;
  }
  if (!until_refused(node0_port(), std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
    std::cout << "RESULT still accepted" << std::endl;
    std::exit(1);
  }
  std::cout << "RESULT refused" << std::endl;
}

// Node 0 returns at once (exit 0). Node 1's first attempt waits until its launcher retired node 0
// (node 0's address refuses), then fails (exit 3); under --auto-recover its next attempt starts
// its task, which must become ready without node 0, prints "RESULT ready peers=<n>", then emits
// to node 0 and prints "RESULT sent to node 0" or "RESULT not sent: <error>".
DITASK_MAIN(restart_after_peer_finished) {
  if (node_id() == 0) {
    return;
  }
  if (attempt_text() == "0") {
    if (!until_refused(node0_port(), std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
      std::cout << "RESULT still accepted" << std::endl;
    }
    std::exit(3);
  }
  auto& task = ditask::task();
  auto running = task.start();
  task.ready();
  std::cout << "RESULT ready peers=" << task.router().peers().size() << std::endl;
  try {
    task.emit_to_node(0, "hello");
    std::cout << "RESULT sent to node 0" << std::endl;
  } catch (const std::exception& e) {
    std::cout << "RESULT not sent: " << e.what() << std::endl;
  }
}
