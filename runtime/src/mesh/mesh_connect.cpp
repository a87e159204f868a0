// SPDX-License-Identifier: MIT
// The mesh, part 2: the listening socket, accepting, dialling with backoff, starting a link.
#include "mesh.hpp"

#include "make_mesh.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <random>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/container/small_vector.hpp>

#include "../codec/envelope.hpp"
#include "auth.hpp"
#include "refusal.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{20};

constexpr std::chrono::milliseconds kMaxBackoff{1000};

/// `tcp://ip:port` of a connected socket's peer, or "a local peer" for Unix sockets.
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

void Mesh::open_listener() {
  boost::system::error_code ec;
  if (settings_.listen_fd >= 0) {
    const int fd = settings_.listen_fd;
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
      throw Error("cannot use the listening socket of " + settings_.listen + ": " + ec.message());
    }
    return;
  }
  if (settings_.listen.empty()) {
    return;  // dial only
  }
  const Address a = parse_address(settings_.listen);
  generic::endpoint endpoint;
  if (a.kind == Address::Kind::ipc) {
    ::unlink(a.path.c_str());  // a stale socket file of an earlier run at this exact path
    endpoint = generic::endpoint(asio::local::stream_protocol::endpoint(a.path));
    bound_ipc_path_ = a.path;
  } else {
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(a.host, std::to_string(a.port), ec);
    if (ec || results.empty()) {
      throw Error("cannot resolve " + settings_.listen + ": " + ec.message());
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
    throw Error("cannot listen on " + settings_.listen + ": " + ec.message(),
                "is another process using that address?");
  }
}

void Mesh::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, generic::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      return;
    }
    if (ec) {
      DITASK_LOG(warn, "mesh") << "accept on " << settings_.listen << " failed: " << ec.message();
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](const boost::system::error_code&) { accept_next(); });
      return;
    }
    const std::string peer = describe_peer(socket.native_handle());
    start_link(std::move(socket), peer, "", settings_.listen.starts_with("tcp://"));
    accept_next();
  });
}

void Mesh::dial(std::size_t i) {
  std::string address;
  {
    std::lock_guard lock(mutex_);
    const Dest& d = peers_.expected()[i];
    if (stopping_ || d.conn) {
      return;
    }
    address = d.address;
  }
  const Address a = parse_address(address);
  if (a.kind == Address::Kind::ipc) {
    connect_to(i, address, {generic::endpoint(asio::local::stream_protocol::endpoint(a.path))}, 0);
    return;
  }
  // --hosts-file names first: a simulated cluster's hosts never reach the system resolver.
  const auto mapped = settings_.hosts.find(a.host);
  const std::string host = mapped == settings_.hosts.end() ? a.host : mapped->second;
  boost::system::error_code not_literal;
  const auto ip = asio::ip::make_address(host, not_literal);
  if (!not_literal) {  // an IP literal needs no resolver (and no resolver thread)
    connect_to(i, address, {generic::endpoint(asio::ip::tcp::endpoint(ip, a.port))}, 0);
    return;
  }
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  resolver->async_resolve(host, std::to_string(a.port),
                          [this, i, address, resolver](const boost::system::error_code& ec,
                                                       const asio::ip::tcp::resolver::results_type& results) {
                            if (ec || results.empty()) {
                              dial_failed(i, "cannot resolve the host: " + ec.message());
                              return;
                            }
                            std::vector<generic::endpoint> endpoints;
                            for (const auto& r : results) {
                              endpoints.emplace_back(r.endpoint());
                            }
                            connect_to(i, address, std::move(endpoints), 0);
                          });
}

void Mesh::connect_to(std::size_t i, const std::string& address, std::vector<generic::endpoint> endpoints,
                      std::size_t k) {
  auto socket = std::make_shared<generic::socket>(io_);
  const auto endpoint = endpoints[k];
  socket->async_connect(endpoint, [this, i, address, socket, endpoints = std::move(endpoints),
                                   k](const boost::system::error_code& ec) mutable {
    if (ec) {
      if (k + 1 < endpoints.size()) {
        connect_to(i, address, std::move(endpoints), k + 1);
      } else {
        dial_failed(i, ec.message());
      }
      return;
    }
    const bool tcp = endpoints[k].protocol().family() != AF_UNIX;
    start_link(std::move(*socket), address, address, tcp);
  });
}

void Mesh::dial_failed(std::size_t i, const std::string& why) {
  std::shared_ptr<asio::steady_timer> timer;
  std::chrono::milliseconds wait{0};
  {
    std::lock_guard lock(mutex_);
    DialSlot& d = peers_.expected()[i].slot;
    d.last_error = why;
    if (stopping_) {
      return;
    }
    d.backoff = std::clamp(d.backoff * 2, kFirstBackoff, kMaxBackoff);
    wait = d.backoff;
    timer = d.timer;
  }
  DITASK_LOG(debug, "mesh") << "dialling failed (" << why << "), again in " << wait.count() << " ms";
  timer->expires_after(wait);
  timer->async_wait([this, i](const boost::system::error_code& ec) {
    if (!ec) {
      dial(i);
    }
  });
}

void Mesh::start_link(Socket socket, std::string peer, std::string dial_address, bool tcp) {
  boost::system::error_code ignored;
  if (tcp) {
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  }
  // The nonce is only the token's challenge.
  std::string nonce = settings_.token.empty() ? std::string() : make_nonce();
  auto link = std::make_shared<Link>(std::move(socket), std::move(peer), std::move(dial_address), std::move(nonce),
                                     *this, settings_.max_frame_bytes, settings_.send_queue_bytes,
                                     settings_.hello_timeout, read_buffers_);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    links_.push_back(link);
  }
  link->start();
  if (link->handshake().own_nonce().empty()) {  // the same hello for every peer: encoded once
    if (!own_hello_body_) {
      own_hello_body_ = control_body(encode_hello(own_hello_));
    }
    link->send_control(FrameType::hello, own_hello_body_);
    return;
  }
  Hello hello = own_hello_;
  hello.nonce = link->handshake().own_nonce();
  link->send_control(FrameType::hello, control_body(encode_hello(hello)));
}

}  // namespace ditask::detail::mesh
