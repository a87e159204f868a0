// SPDX-License-Identifier: MIT
// Dialling one peer's address: resolving it (the --hosts-file names first), trying each
// endpoint in turn, and the backoff between failed attempts.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>

namespace ditask::detail::mesh {

/// The wait before dialling again after a failure that followed a wait of `previous` (0 for the
/// first failure): 20 ms, doubling to at most 1 s.
std::chrono::milliseconds next_dial_backoff(std::chrono::milliseconds previous) noexcept;

/// A connected socket and whether it is TCP.
using OnDialled = std::function<void(boost::asio::generic::stream_protocol::socket, bool tcp)>;
/// Why the dial failed (the resolver's or the last endpoint's error).
using OnDialFailed = std::function<void(const std::string& why)>;

/// Connects to `address` ("tcp://host:port" or "ipc://path"): a host named in `hosts` is
/// replaced by its address, an IP literal needs no resolver, any other name is resolved; each
/// endpoint is tried in turn. Exactly one of the callbacks runs, on the io thread.
/// Thread: io thread. Errors: ditask::Error for an address that does not parse.
void dial_address(boost::asio::io_context& io, const std::string& address,
                  const std::map<std::string, std::string>& hosts, OnDialled on_dialled, OnDialFailed on_failed);

}  // namespace ditask::detail::mesh
