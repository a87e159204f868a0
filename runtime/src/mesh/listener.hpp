// SPDX-License-Identifier: MIT
// The mesh's listening socket: bound from --listen, or the launcher's pre-bound socket adopted,
// accepting until closed.
#pragma once

#include <functional>
#include <string>

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>

namespace ditask::detail::mesh {

/// Thread: open() on the thread that starts the mesh, before the io thread runs; start() and
/// close() on the io thread; unlink_path() after the io thread ended.
class Listener {
 public:
  using Socket = boost::asio::generic::stream_protocol::socket;
  /// An accepted connection: the socket, its peer as text ("tcp://ip:port", or a local peer),
  /// and whether it is TCP.
  using OnAccept = std::function<void(Socket, std::string peer, bool tcp)>;

  explicit Listener(boost::asio::io_context& io) : io_(io), acceptor_(io) {}

  /// Adopts `fd` when it is >= 0 (the launcher bound it), else binds and listens on `listen`
  /// ("tcp://host:port" or "ipc://path"; empty: no listener). Errors: ditask::Error naming the
  /// address (taken, unresolvable, not a socket).
  void open(const std::string& listen, int fd);
  /// True once open() made a listening socket.
  bool is_open() const { return acceptor_.is_open(); }
  /// Accepts connections until close(), each handed to `on_accept`; a failed accept is logged
  /// and tried again after 100 ms.
  void start(OnAccept on_accept);
  /// Stops accepting.
  void close();
  /// Removes the Unix socket file it bound itself (not one the launcher made).
  void unlink_path();

 private:
  void accept_next();

  boost::asio::io_context& io_;
  boost::asio::basic_socket_acceptor<boost::asio::generic::stream_protocol> acceptor_;
  std::string listen_;
  bool tcp_ = false;
  std::string bound_ipc_path_;
  OnAccept on_accept_;
};

}  // namespace ditask::detail::mesh
