// SPDX-License-Identifier: MIT
// The event envelope, {"a": [positional...], "k": {named...}}, as the runtime writes and reads it
// (ditask/detail/packed_args.hpp writes its opening and its middle; nothing else does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ditask/event_args.hpp"
#include "../remote_event.hpp"

namespace ditask::detail::codec {

/// Deepest array/map nesting decode_event_args accepts.
inline constexpr std::size_t kMaxNesting = 256;

/// The payload of an event: the envelope of `args`; binary arguments stay MessagePack bin.
/// Errors: none for values EventArgs can hold.
std::vector<std::uint8_t> encode_event_args(const EventArgs& args);

/// Parses an event payload. Errors: ditask::Error "malformed event payload: ..." for anything but
/// a map with an array "a" and a map "k" (extra keys are ignored), and for nesting deeper than
/// kMaxNesting, so hostile input cannot exhaust the stack.
EventArgs decode_event_args(std::span<const std::uint8_t> payload);

/// Checks an event payload as decode_event_args would and, when it has the envelope's exact
/// layout (`{"a": [...], "k": {...}}`, in that order), says where the positional arguments lie
/// (offsets into `payload`; the bytes are not copied). nullopt for well-formed MessagePack in
/// another layout (decode_event_args then decides). Errors: ditask::Error "malformed event
/// payload: ..." for bytes that are not one well-formed MessagePack value.
std::optional<PackedPayload> locate_event_args(std::span<const std::uint8_t> payload);

}  // namespace ditask::detail::codec
