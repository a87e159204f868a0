// SPDX-License-Identifier: MIT
// How remote calls travel: three task-layer topics on the transport, each an ordinary event
// payload whose first positional values are a header. docs/rpc.md "Wire". The names are short so
// that a topic ("task.ditask.rr") needs no allocation of its own on either side.
//   ditask.rc  a call   [id, function, object, context, arguments...] + named arguments
//   ditask.rr  a reply  [id, 0, result?]  or  [id, 1 + RpcError::Kind, message, hint]
//   ditask.ro  handles  [op, object, token, node]  (docs/rpc.md "Lifetime")
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../remote_event.hpp"
#include "ditask/rpc_future.hpp"

namespace ditask::detail::rpc_wire {

inline constexpr const char* kCall = "ditask.rc";
inline constexpr const char* kReply = "ditask.rr";
inline constexpr const char* kRef = "ditask.ro";
/// True for the three topics above.
inline bool is_rpc_topic(std::string_view event) noexcept {
  return event.size() == 9 && event.starts_with("ditask.r") && (event[8] == 'c' || event[8] == 'r' || event[8] == 'o');
}

/// The reply status of an error of `kind` (0 is a result).
constexpr std::uint8_t status_of(RpcError::Kind kind) { return static_cast<std::uint8_t>(1 + static_cast<int>(kind)); }
/// The kind of a nonzero status (remote_exception for an unknown one).
RpcError::Kind kind_of(std::uint64_t status);

/// What ditask.rpc.ref says.
enum class RefOp : std::uint8_t {
  add = 1,      ///< to the owner: register the sender for object; then tell `node` fork `token` is done
  release = 2,  ///< to the owner: the sender drops `token` registrations of object
  fork_done = 3 ///< to a holder: the receiver of fork `token` is registered, drop the fork's hold
};

/// A call's header.
struct CallHeader {
  std::uint64_t id = 0;
  std::string function;
  std::uint64_t object = 0;
  std::vector<std::uint8_t> context;  ///< a library's call context (CallContextHooks), often empty
  PackedArgs rest;  ///< the positional values after the header (a packed event's; count 0 for JSON)
};
/// The header's values before a call's arguments.
inline constexpr std::size_t kCallHeaderValues = 4;
/// A reply's header.
struct ReplyHeader {
  std::uint64_t id = 0;
  std::uint64_t status = 0;
  PackedArgs rest;  ///< the positional values after the header (a packed event's; count 0 for JSON)
};

/// Reads a call's (a reply's) header from the first positional values of `e`. False for a
/// payload that does not start so.
bool read_call_header(const RemoteEvent& e, CallHeader& out);
bool read_reply_header(const RemoteEvent& e, ReplyHeader& out);
/// The positional arguments after the first `skip`, as JSON (named arguments kept). The packed
/// view of what follows a header is the header's `rest`.
EventArgs json_args_after(const RemoteEvent& e, std::size_t skip);
/// `args` without its first `skip` positional values (named arguments kept).
EventArgs drop_first_args(EventArgs args, std::size_t skip);
/// An event built from a payload this node packed itself (a call or reply to itself).
/// Errors: ditask::Error for a malformed payload (never for one pack_event wrote).
RemoteEvent local_event(std::string event, const std::vector<std::uint8_t>& payload,
                        std::shared_ptr<const EventMeta> meta);

}  // namespace ditask::detail::rpc_wire
