// SPDX-License-Identifier: MIT
#include "listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include "address.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

namespace {

/// `tcp://ip:port` of a connected socket's peer, or "a local (ipc) peer" for Unix sockets.
std::string describe_peer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "an unknown peer";
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return "tcp://" + std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return "tcp://[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "a local (ipc) peer";
}

}  // namespace

void Listener::open(const std::string& listen, int fd) {
  listen_ = listen;
  tcp_ = listen.starts_with("tcp://");
  boost::system::error_code ec;
  if (fd >= 0) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the module's own children must not inherit it
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
      throw Error("DITASK_LISTEN_FD=" + std::to_string(fd) + " is not a socket",
                  "worker mode is started by the ditask launcher");
    }
    const int family = ss.ss_family;
    acceptor_.assign(generic(family, family == AF_UNIX ? 0 : IPPROTO_TCP), fd, ec);
    if (ec) {
      throw Error("cannot use the listening socket of " + listen + ": " + ec.message());
    }
    return;
  }
  if (listen.empty()) {
    return;  // dial only
  }
  const Address a = parse_address(listen);
  generic::endpoint endpoint;
  if (a.kind == Address::Kind::ipc) {
    ::unlink(a.path.c_str());  // a stale socket file of an earlier run at this exact path
    endpoint = generic::endpoint(asio::local::stream_protocol::endpoint(a.path));
    bound_ipc_path_ = a.path;
  } else {
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(a.host, std::to_string(a.port), ec);
    if (ec || results.empty()) {
      throw Error("cannot resolve " + listen + ": " + ec.message());
    }
    endpoint = generic::endpoint(results.begin()->endpoint());
  }
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec && a.kind == Address::Kind::tcp) {
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor_.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    throw Error("cannot listen on " + listen + ": " + ec.message(), "is another process using that address?");
  }
}

void Listener::start(OnAccept on_accept) {
  on_accept_ = std::move(on_accept);
  if (acceptor_.is_open()) {
    accept_next();
  }
}

void Listener::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, generic::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      return;
    }
    if (ec) {
      DITASK_LOG(warn, "mesh") << "accept on " << listen_ << " failed: " << ec.message();
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](const boost::system::error_code&) { accept_next(); });
      return;
    }
    std::string peer = describe_peer(socket.native_handle());
    on_accept_(std::move(socket), std::move(peer), tcp_);
    accept_next();
  });
}

void Listener::close() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void Listener::unlink_path() {
  if (!bound_ipc_path_.empty()) {
    ::unlink(bound_ipc_path_.c_str());
    bound_ipc_path_.clear();
  }
}

}  // namespace ditask::detail::mesh
