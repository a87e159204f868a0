// SPDX-License-Identifier: MIT
// The raw baseline of `scripts/bench.sh rpc`'s calls/s: request/response over plain blocking
// loopback TCP sockets between two processes of our own, one thread each, with the discipline of
// plugins/bench_rpc (K calls in flight; a new call starts when the oldest has its answer), and
// every batching a hand-written program can do: the server answers all requests of one read with
// one write, the client sends the new requests of one read with one write. No codec, no ids, no
// futures, no threads of its own.
//
//   ditask_raw_calls_bench calls [--inflight 64] [--rounds 200000] [--warmup 20000] [--size 64]
//
// Prints `raw_calls_bench calls inflight=K size=S rounds=N p50_us=.. p99_us=.. calls_per_s=..`
// (latency from a request's write to its answer's read). Exit: 0, 1 when a socket operation or
// the server failed, 2 on a usage error.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "bench_measure.hpp"
#include "calls_options.hpp"

namespace {

using ditask::bench::micros;
using ditask::bench::now_ns;
using ditask::bench::reap;

using ditask::bench::UsageError;

[[noreturn]] void fail_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail_errno("write");
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Reads what is there (at least one byte) after `have` bytes of `buffer`; 0 at the peer's end.
std::size_t read_some(int fd, std::vector<std::uint8_t>& buffer, std::size_t have) {
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data() + have, buffer.size() - have);
    if (n >= 0) {
      return static_cast<std::size_t>(n);
    }
    if (errno != EINTR) {
      fail_errno("read");
    }
  }
}

// The server: answers each whole frame with itself; the frames of one read with one write.
int serve(int fd, std::size_t frame) {
  std::vector<std::uint8_t> buffer(std::max<std::size_t>(256 * 1024, 2 * frame));
  std::size_t have = 0;
  for (;;) {
    const std::size_t n = read_some(fd, buffer, have);
    if (n == 0) {
      return have == 0 ? 0 : 1;
    }
    have += n;
    const std::size_t whole = have / frame * frame;
    write_all(fd, buffer.data(), whole);
    std::memmove(buffer.data(), buffer.data() + whole, have - whole);
    have -= whole;
  }
}

int connected_pair(pid_t& child, std::size_t frame) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    fail_errno("listen");
  }
  const int one = 1;
  std::fflush(nullptr);
  child = ::fork();
  if (child < 0) {
    fail_errno("fork");
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int rc = 1;
    try {
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0 || ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        fail_errno("accept");
      }
      rc = serve(fd, frame);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "raw_calls_bench: server error: %s\n", e.what());
    }
    _exit(rc);
  }
  ::close(listener);  // the child's copy keeps listening; connect() below finds it in the backlog
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    fail_errno("connect");
  }
  return fd;
}

void calls(const std::map<std::string, std::int64_t>& options) {
  const auto inflight = options.at("inflight");
  const auto warmup = options.at("warmup");
  const auto total = warmup + options.at("rounds");
  const std::size_t frame = 4 + static_cast<std::size_t>(options.at("size"));
  pid_t child = -1;
  const int fd = connected_pair(child, frame);
  // One frame per call that can be in flight: a 4-byte length, then the payload.
  std::vector<std::uint8_t> requests(frame * static_cast<std::size_t>(inflight), 0x5a);
  for (std::int64_t i = 0; i < inflight; ++i) {
    const auto size = static_cast<std::uint32_t>(frame - 4);
    std::memcpy(requests.data() + static_cast<std::size_t>(i) * frame, &size, 4);
  }
  std::vector<std::uint8_t> buffer(std::max<std::size_t>(256 * 1024, 2 * frame));
  std::deque<std::int64_t> started;  // when each call in flight was written, oldest first
  std::vector<std::int64_t> latencies;
  latencies.reserve(static_cast<std::size_t>(total - warmup));
  std::int64_t issued = std::min(inflight, total);
  std::int64_t answered = 0;
  std::int64_t first = now_ns();
  for (std::int64_t i = 0; i < issued; ++i) {
    started.push_back(first);
  }
  write_all(fd, requests.data(), frame * static_cast<std::size_t>(issued));
  std::size_t have = 0;
  while (answered < total) {
    const std::size_t n = read_some(fd, buffer, have);
    if (n == 0) {
      throw std::runtime_error("the server closed the connection");
    }
    have += n;
    const auto whole = static_cast<std::int64_t>(have / frame);
    const std::int64_t now = now_ns();
    for (std::int64_t i = 0; i < whole; ++i, ++answered) {
      if (answered == warmup) {
        first = started.front();  // the measured window starts with the first measured call
      }
      if (answered >= warmup) {
        latencies.push_back(now - started.front());
      }
      started.pop_front();
    }
    const std::int64_t more = std::min(whole, total - issued);
    for (std::int64_t i = 0; i < more; ++i) {
      started.push_back(now);
    }
    if (more > 0) {
      write_all(fd, requests.data(), frame * static_cast<std::size_t>(more));
      issued += more;
    }
    const std::size_t used = static_cast<std::size_t>(whole) * frame;
    std::memmove(buffer.data(), buffer.data() + used, have - used);
    have -= used;
  }
  const std::int64_t elapsed = now_ns() - first;
  ::shutdown(fd, SHUT_WR);
  struct Child {
    pid_t pid;
  };
  reap(std::vector<Child>{{child}});
  ::close(fd);
  ditask::bench::print_calls("raw_calls_bench", inflight, static_cast<std::int64_t>(frame - 4), latencies, elapsed);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    calls(ditask::bench::parse_calls_options(argc, argv));
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr,
                 "raw_calls_bench: error: %s\n"
                 "usage: ditask_raw_calls_bench calls [--inflight K] [--rounds N] [--warmup N] [--size BYTES]\n",
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raw_calls_bench: error: %s\n", e.what());
    return 1;
  }
}
