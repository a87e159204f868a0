// SPDX-License-Identifier: MIT
#pragma once

/// Host names a job maps to addresses itself (`--hosts-file`), before the system resolver: the
/// launcher's listening address and rendezvous, and the workers' dials. For clusters simulated on
/// one machine, and for tests that must never ask the host's DNS.

#include <map>
#include <string>

#include "ditask/export.hpp"

namespace ditask {

/// Name -> address.
using HostMap = std::map<std::string, std::string>;

/// Reads a hosts-format file: "address name [name...]" per line, '#' starts a comment.
/// Errors: ditask::Error naming the file (unreadable) or the line (an address without a name).
HostMap read_hosts_file(const std::string& path);

/// The address `name` maps to in `hosts`, or `name` itself.
std::string mapped_host(const HostMap& hosts, const std::string& name);

}  // namespace ditask
