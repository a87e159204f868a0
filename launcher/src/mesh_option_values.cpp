// SPDX-License-Identifier: MIT
// The mesh settings of the launcher options: run id, token, startup and send limits, relay.
#include <charconv>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"

#include "option_values.hpp"

namespace ditask::launcher::detail {
namespace {

constexpr std::size_t kMaxRunIdChars = 128;
constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMaxFrameBytes = (std::int64_t{4} << 30) - 1;  // a 32-bit length on the wire
constexpr const char* kBytesHint =
    "e.g. 1048576, 64K, 256M or 1G (K, M and G are binary: 1K = 1024)";

/// "64K" -> 65536: a non-negative integer with an optional K, M or G (either case).
/// Errors: ditask::Error for a malformed or too large count.
std::int64_t to_bytes(const std::string& name, const std::string& text) {
  int shift = 0;
  switch (text.empty() ? '\0' : text.back()) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    default:
      break;
  }
  const char* first = text.data();
  const char* last = first + text.size() - (shift == 0 ? 0 : 1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(first, last, value);
  const bool whole = end == last && first != last;
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && whole && value > (std::numeric_limits<std::int64_t>::max() >> shift))) {
    throw Error("--" + name + " '" + text + "' is too large", kBytesHint);
  }
  if (ec != std::errc() || !whole || value < 0) {
    throw Error("--" + name +
                    " expects a byte count (an integer with an optional K, M or G), got '" + text +
                    "'",
                kBytesHint);
  }
  return value << shift;
}

void check_at_least_bytes(const std::string& name, const std::string& text, std::int64_t value,
                          std::int64_t minimum) {
  if (value < minimum) {
    throw Error("--" + name + " must be at least " + std::to_string(minimum) + " bytes (" +
                    std::to_string(minimum / kKiB) + "K), got " + text,
                kBytesHint);
  }
}

double positive_seconds(const std::string& name, const std::string& text) {
  const double seconds = to_seconds(name, text);
  if (seconds <= 0) {
    throw Error("--" + name + " must be more than 0, got " + text,
                "give a number of seconds, e.g. --" + name + " 2.5");
  }
  return seconds;
}

void check_token(const std::string& token) {
  // Never show the value: it is a secret. nlohmann::json refuses to dump invalid UTF-8, and the
  // token travels to the workers inside DITASK_PLAN's JSON.
  try {
    (void)nlohmann::json(token).dump();
  } catch (const nlohmann::json::exception&) {
    throw Error("--token is not valid UTF-8 text",
                "the value (from --token, DITASK_LAUNCH_TOKEN, --config or DITASK_TOKEN) is not "
                "shown; use printable text, e.g. 32 random hex digits");
  }
}

}  // namespace

void check_run_id(const std::string& what, const std::string& value, const std::string& hint) {
  if (value.empty() || value.size() > kMaxRunIdChars) {
    throw Error(what + " must have 1 to " + std::to_string(kMaxRunIdChars) + " characters, got " +
                    std::to_string(value.size()),
                hint);
  }
  for (char c : value) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      throw Error(what + " '" + value + "' may only use A-Z a-z 0-9 . _ : -", hint);
    }
  }
  // The run id names the --log-dir folder: "." and ".." would name another one.
  if (value == "." || value == "..") {
    throw Error(what + " '" + value + "' names no folder of its own", hint);
  }
}

void apply_mesh_values(const RawValues& values, Options& o) {
  auto get = [&](const std::string& name) -> const std::string* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  if (const auto* v = get("run-id")) {
    check_run_id("--run-id", *v,
                 "the run id names folders: use letters, digits and . _ : - (at most 128)");
    o.run_id = *v;
  }
  if (const auto* v = get("token")) {
    check_token(*v);
    o.token = *v;
  }
  if (const auto* v = get("startup-timeout")) {
    o.startup_timeout = positive_seconds("startup-timeout", *v);
  }
  if (const auto* v = get("send-timeout")) {
    o.send_timeout = positive_seconds("send-timeout", *v);
  }
  if (const auto* v = get("max-frame-bytes")) {
    o.max_frame_bytes = to_bytes("max-frame-bytes", *v);
    check_at_least_bytes("max-frame-bytes", *v, o.max_frame_bytes, kKiB);
    if (o.max_frame_bytes > kMaxFrameBytes) {
      throw Error("--max-frame-bytes must be at most " + std::to_string(kMaxFrameBytes) +
                      " bytes (4G-1), got " + *v,
                  "a frame's length is a 32-bit field on the wire");
    }
  }
  if (const auto* v = get("send-queue-bytes")) {
    o.send_queue_bytes = to_bytes("send-queue-bytes", *v);
    check_at_least_bytes("send-queue-bytes", *v, o.send_queue_bytes, 64 * kKiB);
  }
  if (const auto* v = get("send-policy")) {
    require_choice("send-policy", *v);
    o.send_policy = *v;
  }
  if (const auto* v = get("relay")) {
    o.relay = to_bool("relay", *v);
  }
  if (o.relay && o.topology != "star") {
    throw Error(
        "--relay needs --topology star, got --topology " + o.topology,
        "only a star has a hub to relay; in a mesh every worker reaches every other directly");
  }
}

}  // namespace ditask::launcher::detail
