// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "mesh_tests.hpp"

namespace mesh_tests {

std::int64_t node_id() { return ditask::task().router().node_id(); }

std::int64_t attempt() {
  const char* text = std::getenv("DITASK_ATTEMPT");
  return text == nullptr ? 0 : std::stoll(text);
}

void result(const std::string& text) { say("RESULT", text); }

void say(const std::string& tag, const std::string& text) {
  // One insertion and a flush: the line reaches the launcher whole, even when the worker dies next.
  std::cout << (tag + " " + text + "\n") << std::flush;
}

void drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto s = ditask::task().router().stats();
    if (s.acked + s.lost >= s.sent) {
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("drain: not acknowledged after " + std::to_string(timeout.count()) +
                               " ms: sent=" + std::to_string(s.sent) + " acked=" +
                               std::to_string(s.acked) + " lost=" + std::to_string(s.lost));
    }
    // The counters have no change notification: poll them, briefly.
    std::this_thread::sleep_for(2ms);
  }
}

std::string listen_address() {
  const char* text = std::getenv("DITASK_LISTEN");
  return text == nullptr ? "<unset>" : text;
}

std::string peers_text() {
  std::vector<std::string> items;
  for (const auto& peer : ditask::task().router().peers()) {
    items.push_back(std::to_string(peer.node_id) + "@" + std::to_string(peer.attempt));
  }
  return joined(items);
}

std::string peers_detail() {
  std::vector<std::string> items;
  for (const auto& peer : ditask::task().router().peers()) {
    items.push_back(std::to_string(peer.node_id) + "@" + std::to_string(peer.attempt) + "|" +
                    peer.address + "|" + joined(peer.labels, ";"));
  }
  return joined(items, " ");
}

std::set<std::int64_t> peer_ids() {
  std::set<std::int64_t> ids;
  for (const auto& peer : ditask::task().router().peers()) {
    ids.insert(peer.node_id);
  }
  return ids;
}

std::vector<std::uint8_t> pattern_bytes(std::int64_t seed, std::size_t size) {
  // One 256-byte period, repeated by doubling copies (a byte loop over 1 MiB is slow in Debug).
  std::vector<std::uint8_t> out(size);
  const std::size_t period = std::min<std::size_t>(256, size);
  for (std::size_t k = 0; k < period; ++k) {
    out[k] = static_cast<std::uint8_t>((static_cast<std::uint64_t>(seed) + k) & 0xffU);
  }
  for (std::size_t filled = period; filled < size;) {
    const std::size_t n = std::min(filled, size - filled);
    std::copy_n(out.begin(), n, out.begin() + static_cast<std::ptrdiff_t>(filled));
    filled += n;
  }
  return out;
}

bool is_pattern(const std::vector<std::uint8_t>& bytes, std::int64_t seed,
                std::size_t expected_size) {
  if (bytes.size() != expected_size) {
    return false;
  }
  auto expected = [seed](std::size_t k) {
    return static_cast<std::uint8_t>((static_cast<std::uint64_t>(seed) + k) & 0xffU);
  };
  for (std::size_t k = 0; k < bytes.size(); k += 4093) {  // prime stride: every offset mod 256
    if (bytes[k] != expected(k)) {
      return false;
    }
  }
  return bytes.empty() || bytes.back() == expected(bytes.size() - 1);
}

std::string membership_text(const ditask::Kwargs& kw, bool left) {
  std::string text = (left ? "left:" : "joined:") +
                     std::to_string(kw.get<std::int64_t>("node_id")) + "@" +
                     std::to_string(kw.get<std::int64_t>("attempt"));
  if (left) {
    text += ":" + kw.get<std::string>("reason") +
            ":lost=" + std::to_string(kw.get<std::int64_t>("lost"));
  }
  return text;
}

}  // namespace mesh_tests
