// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

#include "ditask/launcher/plan.hpp"
#include "ditask/runtime/hosts.hpp"

namespace ditask::launcher {

/// The listening sockets the launcher binds for its workers (no bind-close-rebind race, and a
/// port clash is reported before any worker starts). Closes them, and removes the ipc folder,
/// when destroyed. Thread: the launcher's main thread.
class ListenSockets {
 public:
  ListenSockets() = default;
  ~ListenSockets();
  ListenSockets(ListenSockets&& other) noexcept;
  ListenSockets& operator=(ListenSockets&&) = delete;
  ListenSockets(const ListenSockets&) = delete;

  /// Binds and listens on each worker's address (port 0 = any free port; a name mapped by `hosts`
  /// first), rewriting the plan with the real ports, and reserves MASTER_PORT. Errors:
  /// ditask::Error naming the address.
  static ListenSockets bind_all(Plan& plan, const HostMap& hosts = {});
  /// The listening fd of local worker i (-1 once closed).
  int fd(std::size_t i) const { return fds_.at(i); }
  /// Closes local worker i's listening socket (it will not start again): a dial is refused.
  void close(std::size_t i);

 private:
  std::vector<int> fds_;
  std::string ipc_dir_;
};

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

}  // namespace ditask::launcher
