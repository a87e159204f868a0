// SPDX-License-Identifier: MIT
// The baselines of the mesh benchmark (scripts/bench.sh mesh): the same measurements as
// plugins/bench_mesh, done with plain blocking Asio sockets between processes of our own, with
// 4-byte length-prefixed frames and nothing else (no codec, no queues, no threads).
//
//   ditask_raw_mesh_bench rtt    [--transport tcp|ipc] [--rounds 20000] [--warmup 2000] [--size 64]
//   ditask_raw_mesh_bench stream [--transport tcp|ipc] [--count 1000000] [--size 64] [--readers 1]
//   ditask_raw_mesh_bench mesh   --peers N [--rss]
//
// rtt: a forked child echoes each frame back; prints p50/p99 of the round trip in microseconds
// and the context switches of both processes per round trip (getrusage over the same window).
// stream: the process writes `count` frames to each of `readers` forked children, one write() per
// frame and reader; each reader counts whole frames. Prints events/s and GB/s from the first
// write until the last frame reached its last reader (CLOCK_MONOTONIC is shared by processes).
// mesh: binds N loopback listening sockets, then fork+execs N copies of this program
// (`mesh-peer`), each of which dials every lower peer, accepts every higher one, exchanges a
// 4-byte id on each connection and exits (with --rss printing its VmRSS first). Time it
// from the outside. Every subcommand prints one `raw_mesh_bench <figure> key=value ...` line
// (mesh: one per peer, with --rss only).
//
// Exit: 0 on success, 1 when a peer or a socket operation failed, 2 on a usage error.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "bench_measure.hpp"

namespace asio = boost::asio;

namespace {

using ditask::bench::context_switches;
using ditask::bench::Switches;
using ditask::bench::switches_fields;
using ditask::bench::micros;
using ditask::bench::now_ns;
using ditask::bench::reap;
using ditask::bench::StreamReport;
using ditask::bench::vmrss_kb;


// A frame header announcing the end of an rtt run (never a real length here).
constexpr std::uint32_t kStop = 0xffffffffU;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};


// `--name value` options (and bare `--rss`), checked against what the subcommand knows.
class Options {
 public:
  Options(int argc, char** argv, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = 2; i < argc; ++i) {
      const std::string name = argv[i];
      const auto it = values_.find(name.substr(name.rfind('-') + 1));
      if (name.rfind("--", 0) != 0 || it == values_.end()) {
        throw UsageError("unknown option '" + name + "'");
      }
      if (it->first == "rss") {
        it->second = "1";
      } else if (++i < argc) {
        it->second = argv[i];
      } else {
        throw UsageError("option '" + name + "' needs a value");
      }
    }
  }
  std::string text(const std::string& name) const { return values_.at(name); }
  std::int64_t number(const std::string& name) const {
    const auto& value = values_.at(name);
    std::size_t used = 0;
    std::int64_t n = -1;
    try {
      n = std::stoll(value, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (value.empty() || used != value.size() || n < 0) {
      throw UsageError("--" + name + " needs a number >= 0, not '" + value + "'");
    }
    return n;
  }

 private:
  std::map<std::string, std::string> values_;
};

[[noreturn]] void fail_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void write_all(int fd, const void* data, std::size_t size) {
  if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
    fail_errno("write to pipe");
  }
}

// ---- transports: a listener in a child, a dialer in the parent ----

struct Tcp {
  using Socket = asio::ip::tcp::socket;
  static std::uint16_t listen(asio::ip::tcp::acceptor& acceptor, const std::string&) {
    const asio::ip::tcp::endpoint any_port(asio::ip::address_v4::loopback(), 0);
    acceptor.open(any_port.protocol());
    acceptor.bind(any_port);
    acceptor.listen();
    return acceptor.local_endpoint().port();
  }
  static asio::ip::tcp::acceptor acceptor(asio::io_context& ctx) {
    return asio::ip::tcp::acceptor(ctx);
  }
  static Socket connect(asio::io_context& ctx, std::uint16_t port, const std::string&) {
    Socket socket(ctx);
    socket.connect({asio::ip::address_v4::loopback(), port});
    tune(socket);
    return socket;
  }
  // Ping-pong of small frames must not wait for Nagle; ditask's mesh sets it too.
  static void tune(Socket& socket) { socket.set_option(asio::ip::tcp::no_delay(true)); }
};

struct Ipc {
  using Protocol = asio::local::stream_protocol;
  using Socket = Protocol::socket;
  static std::uint16_t listen(Protocol::acceptor& acceptor, const std::string& path) {
    ::unlink(path.c_str());
    acceptor.open();
    acceptor.bind(Protocol::endpoint(path));
    acceptor.listen();
    return 0;
  }
  static Protocol::acceptor acceptor(asio::io_context& ctx) { return Protocol::acceptor(ctx); }
  static Socket connect(asio::io_context& ctx, std::uint16_t, const std::string& path) {
    Socket socket(ctx);
    socket.connect(Protocol::endpoint(path));
    return socket;
  }
  static void tune(Socket&) {}
};

// A forked child and where it listens.
struct Child {
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::string path;
};

// Forks a child that listens (Net::listen), tells the parent its port through a pipe, accepts
// one connection and exits with body(socket). Returns after the child listens. Called before
// the parent creates any Asio object or thread, so the child starts from a clean state.
template <class Net, class Body>
Child fork_listener(const std::string& path, Body body) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    fail_errno("pipe");
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    fail_errno("fork");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no peer outlives a benchmark that was killed
    ::close(pipe_fds[0]);
    int rc = 1;
    try {
      asio::io_context ctx(1);
      auto acceptor = Net::acceptor(ctx);
      const std::uint16_t port = Net::listen(acceptor, path);
      write_all(pipe_fds[1], &port, sizeof port);
      typename Net::Socket socket = acceptor.accept();
      Net::tune(socket);
      rc = body(socket);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "raw_mesh_bench: peer error: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  ::close(pipe_fds[1]);
  Child child{pid, 0, path};
  if (::read(pipe_fds[0], &child.port, sizeof child.port) != sizeof child.port) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("a peer process failed before listening");
  }
  ::close(pipe_fds[0]);
  return child;
}


// A frame: 4-byte length (host order; both ends are on this machine), then the payload.
std::vector<std::uint8_t> make_frame(std::uint32_t size) {
  std::vector<std::uint8_t> frame(sizeof size + size, 0x5a);
  std::memcpy(frame.data(), &size, sizeof size);
  return frame;
}


// ---- rtt ----

// The child: echoes frames until kStop, then sends its context switches since ping `warmup`.
template <class Socket>
int echo(Socket& socket, std::int64_t warmup) {
  std::vector<std::uint8_t> frame;
  std::int64_t pings = 0;
  Switches ctx_start = context_switches();
  for (;;) {
    std::uint32_t size = 0;
    asio::read(socket, asio::buffer(&size, sizeof size));
    if (size == kStop) {
      const Switches ctx = context_switches() - ctx_start;
      asio::write(socket, asio::buffer(&ctx, sizeof ctx));
      return 0;
    }
    frame.resize(sizeof size + size);
    std::memcpy(frame.data(), &size, sizeof size);
    asio::read(socket, asio::buffer(frame.data() + sizeof size, size));
    if (++pings == warmup) {
      ctx_start = context_switches();
    }
    asio::write(socket, asio::buffer(frame));
  }
}

template <class Net>
void rtt(const Options& options, const std::string& path) {
  const auto warmup = options.number("warmup");
  const auto rounds = std::max<std::int64_t>(1, options.number("rounds"));
  const auto size = static_cast<std::uint32_t>(options.number("size"));
  const Child child =
      fork_listener<Net>(path, [warmup](typename Net::Socket& s) { return echo(s, warmup); });
  asio::io_context ctx(1);
  auto socket = Net::connect(ctx, child.port, child.path);
  const auto frame = make_frame(size);
  std::vector<std::uint8_t> reply(frame.size());
  std::vector<std::int64_t> latencies;
  latencies.reserve(static_cast<std::size_t>(rounds));
  Switches ctx_start = context_switches();
  for (std::int64_t i = 0; i < warmup + rounds; ++i) {
    if (i == warmup) {
      ctx_start = context_switches();
    }
    const auto sent = now_ns();
    asio::write(socket, asio::buffer(frame));
    asio::read(socket, asio::buffer(reply.data(), sizeof size));
    asio::read(socket, asio::buffer(reply.data() + sizeof size, size));
    if (i >= warmup) {
      latencies.push_back(now_ns() - sent);
    }
  }
  const auto ctx_self = context_switches() - ctx_start;
  asio::write(socket, asio::buffer(&kStop, sizeof kStop));
  Switches ctx_peer;
  asio::read(socket, asio::buffer(&ctx_peer, sizeof ctx_peer));
  reap(std::vector<Child>{child});
  std::sort(latencies.begin(), latencies.end());
  const auto n = latencies.size();
  std::printf("raw_mesh_bench rtt transport=%s rounds=%zu p50_us=%s p99_us=%s max_us=%s %s\n",
              options.text("transport").c_str(), n, micros(latencies[n / 2]).c_str(),
              micros(latencies[n * 99 / 100]).c_str(), micros(latencies.back()).c_str(),
              switches_fields(ctx_self, ctx_peer, rounds).c_str());
}

// ---- stream ----


// The child: counts whole frames (payload bytes too) until `count` arrived, then reports.
template <class Socket>
int count_frames(Socket& socket, std::int64_t count) {
  std::vector<std::uint8_t> buffer(256 * 1024);
  StreamReport report;
  std::array<std::uint8_t, 4> header{};
  std::size_t header_have = 0;
  std::uint64_t body_left = 0;
  while (report.events < count) {
    const std::size_t n = socket.read_some(asio::buffer(buffer));
    const auto before = report.events;
    for (std::size_t i = 0; i < n;) {
      if (body_left == 0) {
        header[header_have++] = buffer[i++];
        if (header_have == header.size()) {
          std::uint32_t size = 0;
          std::memcpy(&size, header.data(), sizeof size);
          header_have = 0;
          body_left = size;
          report.events += size == 0 ? 1 : 0;
        }
        continue;
      }
      const auto take = std::min<std::uint64_t>(body_left, n - i);
      i += take;
      body_left -= take;
      report.bytes += static_cast<std::int64_t>(take);
      report.events += body_left == 0 ? 1 : 0;
    }
    if (report.events != before) {
      report.last_ns = now_ns();
    }
  }
  asio::write(socket, asio::buffer(&report, sizeof report));
  return 0;
}

template <class Net>
void stream(const Options& options, const std::string& dir) {
  const auto count = std::max<std::int64_t>(1, options.number("count"));
  const auto size = static_cast<std::uint32_t>(options.number("size"));
  const auto readers = std::max<std::int64_t>(1, options.number("readers"));
  std::vector<Child> children;
  for (std::int64_t r = 0; r < readers; ++r) {
    children.push_back(
        fork_listener<Net>(dir + "/reader" + std::to_string(r) + ".sock",
                           [count](typename Net::Socket& s) { return count_frames(s, count); }));
  }
  asio::io_context ctx(1);
  std::vector<typename Net::Socket> sockets;
  for (const auto& child : children) {
    sockets.push_back(Net::connect(ctx, child.port, child.path));
  }
  const auto frame = make_frame(size);
  const auto start = now_ns();
  for (std::int64_t i = 0; i < count; ++i) {
    for (auto& socket : sockets) {
      asio::write(socket, asio::buffer(frame));
    }
  }
  const auto written = now_ns();
  StreamReport total;
  for (auto& socket : sockets) {
    StreamReport report;
    asio::read(socket, asio::buffer(&report, sizeof report));
    total.events += report.events;
    total.bytes += report.bytes;
    total.last_ns = std::max(total.last_ns, report.last_ns);
  }
  reap(children);
  const double seconds = static_cast<double>(total.last_ns - start) / 1e9;
  std::printf(
      "raw_mesh_bench stream transport=%s receivers=%lld count=%lld size=%u delivered=%lld "
      "expected=%lld seconds=%.4f emit_seconds=%.4f events_per_s=%.0f gb_per_s=%.4f "
      "delivered_pct=%.3f\n",
      options.text("transport").c_str(), static_cast<long long>(readers),
      static_cast<long long>(count), size, static_cast<long long>(total.events),
      static_cast<long long>(count * readers), seconds, static_cast<double>(written - start) / 1e9,
      static_cast<double>(count) / seconds,
      static_cast<double>(total.bytes) / static_cast<double>(readers) / seconds / 1e9,
      100.0 * static_cast<double>(total.events) / static_cast<double>(count * readers));
}

// ---- mesh ----

// A listening loopback socket on a free port (close-on-exec: each peer gets only its own).
int listen_any_port(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail_errno("socket");
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    fail_errno("listen");
  }
  port = ntohs(address.sin_port);
  return fd;
}

// The launcher of the raw mesh: like ditask, it binds the ports and hands each peer its socket
// (as fd 3), then fork+execs every peer before waiting for any.
void mesh(const Options& options) {
  const auto peers = options.number("peers");
  if (peers < 1) {
    throw UsageError("--peers needs a number >= 1");
  }
  std::vector<int> fds;
  std::string ports;
  for (std::int64_t i = 0; i < peers; ++i) {
    std::uint16_t port = 0;
    fds.push_back(listen_any_port(port));
    ports += (i == 0 ? "" : ",") + std::to_string(port);
  }
  std::vector<Child> children;
  std::fflush(nullptr);
  for (std::int64_t i = 0; i < peers; ++i) {
    std::string id = std::to_string(i);
    std::string rss = options.text("rss");
    std::array<char*, 6> argv{const_cast<char*>("ditask_raw_mesh_bench"),
                              const_cast<char*>("mesh-peer"),
                              id.data(),
                              ports.data(),
                              rss.data(),
                              nullptr};
    const pid_t pid = ::fork();
    if (pid < 0) {
      fail_errno("fork");
    }
    if (pid == 0) {
      // dup2 clears close-on-exec on fd 3 only (and does nothing when the socket is fd 3).
      const int fd = fds[static_cast<std::size_t>(i)];
      if ((fd == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(fd, 3)) < 0) {
        _exit(126);
      }
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    children.push_back({pid, 0, {}});
  }
  for (const int fd : fds) {
    ::close(fd);
  }
  reap(children);
}

// One peer of the raw mesh: dial every lower peer and send our id, accept every higher one
// (read its id, answer with ours), then read the answers of the lower ones.
int mesh_peer(int argc, char** argv) {
  if (argc != 5) {
    throw UsageError("mesh-peer is started by 'mesh'");
  }
  const auto self = static_cast<std::uint32_t>(std::stoul(argv[2]));
  std::vector<std::uint16_t> ports;
  for (std::string rest = argv[3]; !rest.empty();) {
    const auto comma = rest.find(',');
    ports.push_back(static_cast<std::uint16_t>(std::stoul(rest.substr(0, comma))));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  asio::io_context ctx(1);
  asio::ip::tcp::acceptor acceptor(ctx);
  acceptor.assign(asio::ip::tcp::v4(), 3);
  std::vector<asio::ip::tcp::socket> lower;
  for (std::uint32_t peer = 0; peer < self; ++peer) {
    lower.push_back(Tcp::connect(ctx, ports[peer], {}));
    asio::write(lower.back(), asio::buffer(&self, sizeof self));
  }
  for (std::size_t higher = self + 1; higher < ports.size(); ++higher) {
    auto socket = acceptor.accept();
    std::uint32_t id = 0;
    asio::read(socket, asio::buffer(&id, sizeof id));
    asio::write(socket, asio::buffer(&self, sizeof self));
  }
  for (auto& socket : lower) {
    std::uint32_t id = 0;
    asio::read(socket, asio::buffer(&id, sizeof id));
  }
  if (std::string(argv[4]) == "1") {
    std::printf("raw_mesh_bench mesh-peer node=%u peers=%zu vmrss_kb=%lld\n", self,
                ports.size() - 1, static_cast<long long>(vmrss_kb()));
  }
  return 0;
}

// A private directory for Unix socket paths, removed with its sockets at exit.
class SocketDir {
 public:
  SocketDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/raw_mesh_bench.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      fail_errno("mkdtemp");
    }
    path_ = pattern;
  }
  ~SocketDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  SocketDir(const SocketDir&) = delete;
  SocketDir& operator=(const SocketDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int run(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "mesh-peer") {
    return mesh_peer(argc, argv);
  }
  if (command == "mesh") {
    mesh(Options(argc, argv, {{"peers", ""}, {"rss", "0"}}));
    return 0;
  }
  std::map<std::string, std::string> defaults{{"transport", "tcp"}, {"size", "64"}};
  if (command == "rtt") {
    defaults.insert({{"rounds", "20000"}, {"warmup", "2000"}});
  } else if (command == "stream") {
    defaults.insert({{"count", "1000000"}, {"readers", "1"}});
  } else {
    throw UsageError(command.empty() ? "no subcommand" : "unknown subcommand '" + command + "'");
  }
  const Options options(argc, argv, defaults);
  const auto transport = options.text("transport");
  if (transport != "tcp" && transport != "ipc") {
    throw UsageError("--transport is tcp or ipc, not '" + transport + "'");
  }
  if (options.number("size") >= kStop) {
    throw UsageError("--size is too large");
  }
  if (command == "stream" && options.number("readers") > 1024) {
    throw UsageError("--readers is at most 1024");
  }
  const SocketDir dir;
  if (command == "rtt") {
    transport == "tcp" ? rtt<Tcp>(options, {}) : rtt<Ipc>(options, dir.path() + "/echo.sock");
  } else {
    transport == "tcp" ? stream<Tcp>(options, dir.path()) : stream<Ipc>(options, dir.path());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr,
                 "raw_mesh_bench: error: %s\n"
                 "usage: ditask_raw_mesh_bench rtt|stream [--transport tcp|ipc] [--rounds N] "
                 "[--warmup N] [--size BYTES] [--count N] [--readers N]\n"
                 "       ditask_raw_mesh_bench mesh --peers N [--rss]\n",
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raw_mesh_bench: error: %s\n", e.what());
    return 1;
  }
}
