// SPDX-License-Identifier: MIT
#include "address.hpp"

#include <charconv>

#include "ditask/error.hpp"

namespace ditask::detail::mesh {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error("bad mesh address '" + std::string(text) + "': " + why,
              "use tcp://host:port or ipc:///absolute/path");
}

}  // namespace

Address parse_address(std::string_view text) {
  Address a;
  a.text = std::string(text);
  if (text.starts_with("ipc://")) {
    a.kind = Address::Kind::ipc;
    a.path = std::string(text.substr(6));
    if (a.path.empty() || a.path.front() != '/') {
      bad(text, "the ipc path must be absolute");
    }
    if (a.path.size() > kMaxIpcPath) {
      bad(text, "the path is " + std::to_string(a.path.size()) + " bytes; a Unix socket path holds at most " +
                    std::to_string(kMaxIpcPath));
    }
    return a;
  }
  if (!text.starts_with("tcp://")) {
    bad(text, "unknown scheme");
  }
  std::string_view rest = text.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    bad(text, "no port");
  }
  std::string_view host = rest.substr(0, colon);
  const std::string_view port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    bad(text, "no host");
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    bad(text, "bad port '" + std::string(port) + "'");
  }
  a.host = std::string(host);
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

}  // namespace ditask::detail::mesh
