// SPDX-License-Identifier: MIT
#include "address.hpp"

#include <charconv>

#include "ditask/error.hpp"
#include "ditask/runtime/mesh_address.hpp"

namespace ditask::detail::mesh {
namespace {

// Parses `text` into `a`; returns why it is not an address, or "" when it is one.
std::string parse_into(std::string_view text, Address& a) {
  a.text = std::string(text);
  if (text.starts_with("ipc://")) {
    a.kind = Address::Kind::ipc;
    a.path = std::string(text.substr(6));
    if (a.path.empty() || a.path.front() != '/') {
      return "the ipc path must be absolute";
    }
    if (a.path.size() > kMaxIpcPath) {
      return "the path is " + std::to_string(a.path.size()) + " bytes; a Unix socket path holds at most " +
             std::to_string(kMaxIpcPath);
    }
    return "";
  }
  if (!text.starts_with("tcp://")) {
    return "unknown scheme";
  }
  std::string_view rest = text.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    return "no port";
  }
  std::string_view host = rest.substr(0, colon);
  const std::string_view port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    return "no host";
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return "bad port '" + std::string(port) + "'";
  }
  a.host = std::string(host);
  a.port = static_cast<std::uint16_t>(value);
  return "";
}

}  // namespace

Address parse_address(std::string_view text) {
  Address a;
  if (auto why = parse_into(text, a); !why.empty()) {
    throw Error("bad mesh address '" + std::string(text) + "': " + why, std::string(kMeshAddressHint));
  }
  return a;
}

}  // namespace ditask::detail::mesh

namespace ditask {

std::string mesh_address_problem(const std::string& text) {
  detail::mesh::Address ignored;
  return detail::mesh::parse_into(text, ignored);
}

}  // namespace ditask
