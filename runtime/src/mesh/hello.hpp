// SPDX-License-Identifier: MIT
// The hello frame's payload: how a node describes itself to a peer, and when it must refuse one.
//
// On the wire it is a MessagePack map with short keys (every key is always written):
//
//   key  field             type                 limits / default when absent
//   v    version           unsigned int         required, <= 2^32-1
//   n    node_id           int                  required, int64
//   i    instance          unsigned int         required
//   m    max_frame_bytes   unsigned int         required
//   r    run_id            string               <= 256 bytes, default ""
//   rx   run_id_explicit   bool                 default false
//   a    attempt           int                  int64, default 0
//   l    labels            array of strings     <= 256 entries of <= 256 bytes, default []
//   la   listen            string               <= 1024 bytes, default ""
//   c    nonce             string               lowercase hex, <= 128 bytes, default ""
//   au   auth              bool                 default false
//   w    world_size        int                  int64 >= 0, default 0 (not a job of several launchers)
//
// Strings hold no control characters, so error and log lines quoting them stay one line. Unknown
// keys are ignored (a later version may add some). A hello of another version is decoded only as
// far as its "v", so hello_refusal (refusal.hpp) can name the mismatch.
//
// Pure code: no sockets, no threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ditask/export.hpp"

#include "frame.hpp"
#include "../transport/node_settings.hpp"

namespace ditask::detail::mesh {

/// Longest hello payload decode_hello parses; longer ones are refused before parsing.
inline constexpr std::size_t kMaxHelloBytes = 128 * 1024;
/// Most labels a hello may carry.
inline constexpr std::size_t kMaxHelloLabels = 256;
/// Longest label, in bytes.
inline constexpr std::size_t kMaxLabelBytes = 256;
/// Longest run id, in bytes.
inline constexpr std::size_t kMaxRunIdBytes = 256;
/// Longest listen address, in bytes.
inline constexpr std::size_t kMaxListenBytes = 1024;
/// Longest nonce, in bytes (make_nonce() gives 64).
inline constexpr std::size_t kMaxNonceBytes = 128;
/// Deepest array/map nesting decode_hello walks (inside unknown keys); deeper input is refused.
inline constexpr std::size_t kMaxHelloNesting = 32;

/// What a node tells a peer about itself in its hello frame.
struct Hello {
  std::uint32_t version = kWireVersion;
  std::string run_id;
  bool run_id_explicit = false;  // set by --run-id / inherited DITASK_RUN_ID / platform
  std::int64_t node_id = 0;
  std::int64_t attempt = 0;    // DITASK_ATTEMPT (restart count)
  std::uint64_t instance = 0;  // random per process, tells two processes with one node id apart
  std::set<std::string> labels;
  std::uint64_t max_frame_bytes = 0;  // the largest frame (topic + payload) this node accepts
  std::string listen;                 // the address this node listens on (tcp://h:p or ipc:///path)
  std::string nonce;                  // challenge for the token proof (make_nonce())
  bool auth = false;                  // this node has a token and requires the peer's proof
  std::int64_t world_size = 0;        // --world-size of a job of several launchers, else 0

  bool operator==(const Hello&) const = default;
};

/// The hello payload (the table above). Errors: ditask::Error "invalid hello: ..." when a field
/// breaks its limits, so whatever we send, a peer of our version can decode.
std::vector<std::uint8_t> encode_hello(const Hello& hello);

/// Parses a hello payload from the wire. Memory and stack use are bounded by kMaxHelloBytes and
/// kMaxHelloNesting whatever the bytes claim.
/// Errors: ditask::Error "malformed hello: ..." (one line) for anything but a valid payload.
Hello decode_hello(std::span<const std::uint8_t> payload);

using detail::printable;

}  // namespace ditask::detail::mesh
