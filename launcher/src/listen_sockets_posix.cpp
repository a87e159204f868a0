// SPDX-License-Identifier: MIT
#include "listen_sockets.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "ditask/error.hpp"

namespace ditask::launcher {
namespace {

struct AddrInfoFree {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};

/// Binds and listens on host:port; returns the fd and the port it got. `listen_backlog` 0 means
/// "bind only" (for reserving a port).
int bind_tcp(const std::string& host, int port, int listen_backlog, int& bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  const std::string service = std::to_string(port);
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (int rc = ::getaddrinfo(bare.c_str(), service.c_str(), &hints, &raw); rc != 0) {
    throw Error("cannot resolve listen address '" + host + "': " + ::gai_strerror(rc),
                "give --address as an IP address of this machine, or map the name to one with --hosts-file");
  }
  std::unique_ptr<addrinfo, AddrInfoFree> info(raw);
  int fd = ::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw Error(std::string("cannot create a socket: ") + std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, info->ai_addr, info->ai_addrlen) != 0 ||
      (listen_backlog > 0 && ::listen(fd, listen_backlog) != 0)) {
    int err = errno;
    ::close(fd);
    throw Error("cannot listen on tcp://" + host + ":" + std::to_string(port) + ": " + std::strerror(err),
                err == EADDRINUSE ? "another process uses this port: pick other --ports, or leave "
                                    "--ports out to get free ports"
                                  : "check --address: it must be an address of this machine");
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

int bind_ipc(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    throw Error("ipc path '" + path + "' is too long for a Unix socket",
                "set TMPDIR to a shorter folder, or give a shorter --run-id");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    throw Error("cannot listen on ipc://" + path + ": " + std::strerror(err));
  }
  return fd;
}

/// Splits "tcp://host:port" (host may be "[v6]").
std::pair<std::string, int> split_tcp(const std::string& url) {
  std::string rest = url.substr(6);
  auto colon = rest.rfind(':');
  return {rest.substr(0, colon), std::stoi(rest.substr(colon + 1))};
}

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

ListenSockets::~ListenSockets() {
  for (int fd : fds_) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  if (!ipc_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(ipc_dir_, ignored);
  }
}

void ListenSockets::close(std::size_t i) {
  if (fds_.at(i) >= 0) {
    ::close(fds_[i]);
    fds_[i] = -1;
  }
}

ListenSockets::ListenSockets(ListenSockets&& other) noexcept
    : fds_(std::move(other.fds_)), ipc_dir_(std::move(other.ipc_dir_)) {
  other.fds_.clear();
  other.ipc_dir_.clear();
}

/// Where to bind the advertised `host`: its --hosts-file address; else the host itself, or
/// `fallback` (when set) if the host does not resolve now.
static std::string bind_target(const HostMap& hosts, const std::string& host, const std::string& fallback) {
  if (hosts.count(host) != 0 || fallback.empty()) {
    return mapped_host(hosts, host);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* info = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &info) != 0) {
    return fallback;
  }
  ::freeaddrinfo(info);
  return host;
}

ListenSockets ListenSockets::bind_all(Plan& plan, const HostMap& hosts) {
  ListenSockets sockets;
  for (auto& worker : plan.workers) {
    if (worker.listen.rfind("ipc://", 0) == 0) {
      std::string path = worker.listen.substr(6);
      auto dir = std::filesystem::path(path).parent_path();
      if (sockets.ipc_dir_.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) {
          throw ipc_folder_error(ec.message());
        }
        sockets.ipc_dir_ = dir.string();
      }
      sockets.fds_.push_back(bind_ipc(path));
      continue;
    }
    auto [host, port] = split_tcp(worker.listen);
    int bound = 0;
    // The address keeps its name (what peers dial); the socket binds where the name maps to.
    sockets.fds_.push_back(bind_tcp(bind_target(hosts, host, plan.bind_host), port, 128, bound));
    worker.listen = "tcp://" + host + ":" + std::to_string(bound);
  }
  // MASTER_PORT: a free port for the user's own framework (never a mesh port). It is released
  // again here, so the framework can bind it; nothing else of ours will take it.
  if (plan.workers.empty() || plan.workers.front().rank != 0) {
    return sockets;
  }
  // On this machine, where its workers listen: MASTER_ADDR is the job's first host as the
  // platform names it, a name that need not resolve here (--address, --hosts-file).
  const auto& first = plan.workers.front().listen;
  const std::string here = first.rfind("tcp://", 0) == 0 ? split_tcp(first).first : std::string("127.0.0.1");
  int reserved = 0;
  int fd = bind_tcp(bind_target(hosts, here, plan.bind_host), 0, 0, reserved);
  ::close(fd);
  plan.master_port = reserved;
  return sockets;
}

}  // namespace ditask::launcher
