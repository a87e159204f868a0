// SPDX-License-Identifier: MIT
// The mesh, part 2: dialling its peers (dialer.hpp) with backoff, starting a link on a socket the
// listener accepted or a dial connected.
#include "mesh.hpp"

#include "make_mesh.hpp"


#include <algorithm>

#include <boost/asio/post.hpp>

#include "../codec/envelope.hpp"
#include "auth.hpp"
#include "dialer.hpp"
#include "refusal.hpp"
#include "ditask/runtime/log.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

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
  dial_address(
      io_, address, settings_.hosts,
      [this, address](Socket socket, bool tcp) { start_link(std::move(socket), address, address, tcp); },
      [this, i](const std::string& why) { dial_failed(i, why); });
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
    d.backoff = next_dial_backoff(d.backoff);
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
  link->set_io_runner(&runner_);
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
