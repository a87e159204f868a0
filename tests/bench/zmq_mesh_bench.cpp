// SPDX-License-Identifier: MIT
// The second baseline of the mesh benchmark (scripts/bench.sh mesh): what a user would pick
// instead of ditask's mesh, ZeroMQ (Debian's libzmq5, 4.3), with DEALER sockets at their defaults
// (send and receive high-water marks of 1000 messages: a full queue blocks, like ditask's wait
// policy), measured exactly as the raw baseline and plugins/bench_mesh are (bench_measure.hpp).
//
//   ditask_zmq_mesh_bench rtt    [--transport tcp|ipc] [--rounds 20000] [--warmup 2000] [--size 64]
//   ditask_zmq_mesh_bench stream [--transport tcp|ipc] [--count 1000000] [--size 64] [--readers 1]
//
// rtt: a forked child binds a DEALER and echoes each message; the parent connects its own and
// prints p50/p99 of the round trip in microseconds and the context switches of both processes
// (all their threads, ZeroMQ's io threads included) per round trip.
// stream: the parent sends `count` messages to each of `readers` forked children (one DEALER
// per child); each child counts them and reports when the last arrived. Prints events/s and
// GB/s from the first send until the last message reached its last reader.
// Every subcommand prints one `zmq_mesh_bench <figure> key=value ...` line.
//
// Exit: 0 on success, 1 when a peer or a socket operation failed, 2 on a usage error.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <zmq.h>

#include "bench_measure.hpp"

namespace {

using ditask::bench::context_switches;
using ditask::bench::Switches;
using ditask::bench::switches_fields;
using ditask::bench::micros;
using ditask::bench::now_ns;
using ditask::bench::reap;
using ditask::bench::StreamReport;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `--name value` options, checked against what the subcommand knows.
std::map<std::string, std::string> parse(int argc, char** argv, std::map<std::string, std::string> values) {
  for (int i = 2; i < argc; ++i) {
    const std::string name = argv[i];
    const auto it = name.rfind("--", 0) == 0 ? values.find(name.substr(2)) : values.end();
    if (it == values.end()) {
      throw UsageError("unknown option '" + name + "'");
    }
    if (++i >= argc) {
      throw UsageError("option '" + name + "' needs a value");
    }
    it->second = argv[i];
  }
  return values;
}

std::int64_t number(const std::map<std::string, std::string>& options, const std::string& name) {
  const std::string& text = options.at(name);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 0) {
    throw UsageError("--" + name + " needs a number >= 0, not '" + text + "'");
  }
  return n;
}

[[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string(what) + ": " + zmq_strerror(zmq_errno())); }

// One context and one DEALER socket, closed in order.
class Dealer {
 public:
  Dealer() : context_(zmq_ctx_new()) {
    if (context_ == nullptr || (socket_ = zmq_socket(context_, ZMQ_DEALER)) == nullptr) {
      fail("zmq_socket");
    }
    const int linger = 0;
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  }
  ~Dealer() {
    if (socket_ != nullptr) {
      zmq_close(socket_);
    }
    zmq_ctx_term(context_);
  }
  Dealer(const Dealer&) = delete;
  Dealer& operator=(const Dealer&) = delete;

  /// Binds `endpoint` (tcp://127.0.0.1:* picks a port) and returns the endpoint bound.
  std::string bind(const std::string& endpoint) {
    if (zmq_bind(socket_, endpoint.c_str()) != 0) {
      fail("zmq_bind");
    }
    char bound[256];
    std::size_t size = sizeof bound;
    zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, bound, &size);
    return bound;
  }
  void connect(const std::string& endpoint) {
    if (zmq_connect(socket_, endpoint.c_str()) != 0) {
      fail("zmq_connect");
    }
  }
  void send(const void* data, std::size_t size) {
    while (zmq_send(socket_, data, size, 0) < 0) {
      if (zmq_errno() != EINTR) {
        fail("zmq_send");
      }
    }
  }
  /// Receives one message into `buffer` (grown as needed); returns its size.
  std::size_t receive(std::vector<std::uint8_t>& buffer) {
    zmq_msg_t message;
    zmq_msg_init(&message);
    while (zmq_msg_recv(&message, socket_, 0) < 0) {
      if (zmq_errno() != EINTR) {
        zmq_msg_close(&message);
        fail("zmq_msg_recv");
      }
    }
    const std::size_t size = zmq_msg_size(&message);
    if (buffer.size() < size) {
      buffer.resize(size);
    }
    std::memcpy(buffer.data(), zmq_msg_data(&message), size);
    zmq_msg_close(&message);
    return size;
  }

 private:
  void* context_;
  void* socket_ = nullptr;
};

struct Child {
  pid_t pid = -1;
  std::string endpoint;
};

// Forks a child that binds a DEALER (on `endpoint`), tells the parent the endpoint bound through
// a pipe and exits with body(dealer). Called before the parent creates any ZeroMQ context: a
// context does not survive a fork.
template <class Body>
Child fork_peer(const std::string& endpoint, Body body) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no peer outlives a benchmark that was killed
    ::close(pipe_fds[0]);
    int rc = 1;
    try {
      Dealer dealer;
      const std::string bound = dealer.bind(endpoint);
      const auto size = static_cast<std::uint32_t>(bound.size());
      if (::write(pipe_fds[1], &size, sizeof size) == sizeof size &&
          ::write(pipe_fds[1], bound.data(), size) == static_cast<ssize_t>(size)) {
        ::close(pipe_fds[1]);
        rc = body(dealer);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zmq_mesh_bench: peer error: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  ::close(pipe_fds[1]);
  Child child{pid, {}};
  std::uint32_t size = 0;
  if (::read(pipe_fds[0], &size, sizeof size) == sizeof size && size < 4096) {
    child.endpoint.resize(size);
    if (::read(pipe_fds[0], child.endpoint.data(), size) != static_cast<ssize_t>(size)) {
      child.endpoint.clear();
    }
  }
  ::close(pipe_fds[0]);
  if (child.endpoint.empty()) {
    throw std::runtime_error("a peer process failed before binding");
  }
  return child;
}


std::string endpoint_for(const std::string& transport, const std::string& dir, int index) {
  if (transport == "ipc") {
    return "ipc://" + dir + "/peer" + std::to_string(index) + ".sock";
  }
  return "tcp://127.0.0.1:*";
}

// ---- rtt ----

// The child: echoes messages until an empty one, then sends its context switches since ping
// `warmup`.
int echo(Dealer& dealer, std::int64_t warmup) {
  std::vector<std::uint8_t> buffer(64);
  std::int64_t pings = 0;
  Switches ctx_start = context_switches();
  for (;;) {
    const std::size_t size = dealer.receive(buffer);
    if (size == 0) {
      const Switches ctx = context_switches() - ctx_start;
      dealer.send(&ctx, sizeof ctx);
      return 0;
    }
    if (++pings == warmup) {
      ctx_start = context_switches();
    }
    dealer.send(buffer.data(), size);
  }
}

void rtt(const std::map<std::string, std::string>& options, const std::string& dir) {
  const auto warmup = number(options, "warmup");
  const auto rounds = std::max<std::int64_t>(1, number(options, "rounds"));
  const auto size = static_cast<std::size_t>(std::max<std::int64_t>(1, number(options, "size")));
  const std::string transport = options.at("transport");
  const Child child = fork_peer(endpoint_for(transport, dir, 0), [warmup](Dealer& d) { return echo(d, warmup); });
  Dealer dealer;
  dealer.connect(child.endpoint);
  const std::vector<std::uint8_t> message(size, 0x5a);
  std::vector<std::uint8_t> reply(size);
  std::vector<std::int64_t> latencies;
  latencies.reserve(static_cast<std::size_t>(rounds));
  Switches ctx_start = context_switches();
  for (std::int64_t i = 0; i < warmup + rounds; ++i) {
    if (i == warmup) {
      ctx_start = context_switches();
    }
    const auto sent = now_ns();
    dealer.send(message.data(), message.size());
    dealer.receive(reply);
    if (i >= warmup) {
      latencies.push_back(now_ns() - sent);
    }
  }
  const auto ctx_self = context_switches() - ctx_start;
  dealer.send(nullptr, 0);
  std::vector<std::uint8_t> peer(sizeof(Switches));
  dealer.receive(peer);
  Switches ctx_peer;
  std::memcpy(&ctx_peer, peer.data(), sizeof ctx_peer);
  reap(std::vector<Child>{child});
  std::sort(latencies.begin(), latencies.end());
  const auto n = latencies.size();
  std::printf("zmq_mesh_bench rtt transport=%s rounds=%zu p50_us=%s p99_us=%s max_us=%s %s\n",
              transport.c_str(), n, micros(latencies[n / 2]).c_str(), micros(latencies[n * 99 / 100]).c_str(),
              micros(latencies.back()).c_str(), switches_fields(ctx_self, ctx_peer, rounds).c_str());
}

// ---- stream ----


int count_messages(Dealer& dealer, std::int64_t count) {
  std::vector<std::uint8_t> buffer(64);
  StreamReport report;
  while (report.events < count) {
    report.bytes += static_cast<std::int64_t>(dealer.receive(buffer));
    ++report.events;
  }
  report.last_ns = now_ns();
  dealer.send(&report, sizeof report);
  return 0;
}

void stream(const std::map<std::string, std::string>& options, const std::string& dir) {
  const auto count = std::max<std::int64_t>(1, number(options, "count"));
  const auto size = static_cast<std::size_t>(number(options, "size"));
  const auto readers = std::max<std::int64_t>(1, number(options, "readers"));
  const std::string transport = options.at("transport");
  std::vector<Child> children;
  for (std::int64_t r = 0; r < readers; ++r) {
    children.push_back(fork_peer(endpoint_for(transport, dir, static_cast<int>(r)),
                                 [count](Dealer& d) { return count_messages(d, count); }));
  }
  std::vector<std::unique_ptr<Dealer>> dealers;
  for (const auto& child : children) {
    dealers.push_back(std::make_unique<Dealer>());
    dealers.back()->connect(child.endpoint);
  }
  const std::vector<std::uint8_t> message(size, 0x5a);
  const auto start = now_ns();
  for (std::int64_t i = 0; i < count; ++i) {
    for (auto& dealer : dealers) {
      dealer->send(message.data(), message.size());
    }
  }
  const auto written = now_ns();
  StreamReport total;
  std::vector<std::uint8_t> buffer(sizeof(StreamReport));
  for (auto& dealer : dealers) {
    StreamReport report;
    dealer->receive(buffer);
    std::memcpy(&report, buffer.data(), sizeof report);
    total.events += report.events;
    total.bytes += report.bytes;
    total.last_ns = std::max(total.last_ns, report.last_ns);
  }
  reap(children);
  const double seconds = static_cast<double>(total.last_ns - start) / 1e9;
  std::printf(
      "zmq_mesh_bench stream transport=%s receivers=%lld count=%lld size=%zu delivered=%lld expected=%lld "
      "seconds=%.4f emit_seconds=%.4f events_per_s=%.0f gb_per_s=%.4f delivered_pct=%.3f\n",
      transport.c_str(), static_cast<long long>(readers), static_cast<long long>(count), size,
      static_cast<long long>(total.events), static_cast<long long>(count * readers), seconds,
      static_cast<double>(written - start) / 1e9, static_cast<double>(count) / seconds,
      static_cast<double>(total.bytes) / static_cast<double>(readers) / seconds / 1e9,
      100.0 * static_cast<double>(total.events) / static_cast<double>(count * readers));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    const auto dir = std::filesystem::temp_directory_path() / ("ditask_zmq_bench." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    struct Cleanup {
      std::filesystem::path dir;
      ~Cleanup() {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
      }
    } cleanup{dir};
    if (command == "rtt") {
      const auto options = parse(argc, argv, {{"transport", "tcp"}, {"rounds", "20000"}, {"warmup", "2000"}, {"size", "64"}});
      if (options.at("transport") != "tcp" && options.at("transport") != "ipc") {
        throw UsageError("--transport is tcp or ipc");
      }
      rtt(options, dir.string());
    } else if (command == "stream") {
      const auto options =
          parse(argc, argv, {{"transport", "tcp"}, {"count", "1000000"}, {"size", "64"}, {"readers", "1"}});
      if (options.at("transport") != "tcp" && options.at("transport") != "ipc") {
        throw UsageError("--transport is tcp or ipc");
      }
      stream(options, dir.string());
    } else {
      throw UsageError(command.empty() ? "a subcommand is needed" : "unknown subcommand '" + command + "'");
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr,
                 "zmq_mesh_bench: error: %s\n"
                 "usage: ditask_zmq_mesh_bench rtt|stream [--transport tcp|ipc] [--rounds N] [--warmup N] "
                 "[--size BYTES] [--count N] [--readers N]\n",
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zmq_mesh_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
