// SPDX-License-Identifier: MIT
#include "dialer.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "address.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{20};
constexpr std::chrono::milliseconds kMaxBackoff{1000};

// Tries endpoints[k], then the next ones, until one connects.
void connect_next(asio::io_context& io, std::vector<generic::endpoint> endpoints, std::size_t k, OnDialled on_dialled,
                  OnDialFailed on_failed) {
  auto socket = std::make_shared<generic::socket>(io);
  const auto endpoint = endpoints[k];
  socket->async_connect(endpoint, [&io, socket, endpoints = std::move(endpoints), k, on_dialled = std::move(on_dialled),
                                   on_failed = std::move(on_failed)](const boost::system::error_code& ec) mutable {
    if (ec) {
      if (k + 1 < endpoints.size()) {
        connect_next(io, std::move(endpoints), k + 1, std::move(on_dialled), std::move(on_failed));
      } else {
        on_failed(ec.message());
      }
      return;
    }
    on_dialled(std::move(*socket), endpoints[k].protocol().family() != AF_UNIX);
  });
}

}  // namespace

std::chrono::milliseconds next_dial_backoff(std::chrono::milliseconds previous) noexcept {
  return std::clamp(previous * 2, kFirstBackoff, kMaxBackoff);
}

void dial_address(asio::io_context& io, const std::string& address, const std::map<std::string, std::string>& hosts,
                  OnDialled on_dialled, OnDialFailed on_failed) {
  const Address a = parse_address(address);
  if (a.kind == Address::Kind::ipc) {
    connect_next(io, {generic::endpoint(asio::local::stream_protocol::endpoint(a.path))}, 0, std::move(on_dialled),
                 std::move(on_failed));
    return;
  }
  // --hosts-file names first: a simulated cluster's hosts never reach the system resolver.
  const auto mapped = hosts.find(a.host);
  const std::string host = mapped == hosts.end() ? a.host : mapped->second;
  boost::system::error_code not_literal;
  const auto ip = asio::ip::make_address(host, not_literal);
  if (!not_literal) {  // an IP literal needs no resolver (and no resolver thread)
    connect_next(io, {generic::endpoint(asio::ip::tcp::endpoint(ip, a.port))}, 0, std::move(on_dialled),
                 std::move(on_failed));
    return;
  }
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io);
  resolver->async_resolve(host, std::to_string(a.port),
                          [&io, resolver, on_dialled = std::move(on_dialled), on_failed = std::move(on_failed)](
                              const boost::system::error_code& ec,
                              const asio::ip::tcp::resolver::results_type& results) mutable {
                            if (ec || results.empty()) {
                              on_failed("cannot resolve the host: " + ec.message());
                              return;
                            }
                            std::vector<generic::endpoint> endpoints;
                            for (const auto& r : results) {
                              endpoints.emplace_back(r.endpoint());
                            }
                            connect_next(io, std::move(endpoints), 0, std::move(on_dialled), std::move(on_failed));
                          });
}

}  // namespace ditask::detail::mesh
