// SPDX-License-Identifier: MIT
// JSON values <-> MessagePack with the one codec (ditask/msgpack.hpp): the JSON path of event
// arguments, byes, and anything else the runtime writes as a map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/msgpack.hpp"

namespace ditask::detail::codec {

/// Appends `value` (a JSON binary becomes bin, or ext when it has a subtype; floats float64).
void write_json(Packer& packer, const nlohmann::json& value);

/// One item as JSON: a scalar's value, an empty array or object for a container's header (its
/// elements are the caller's to read).
nlohmann::json scalar_json(const Reader::Item& item);

/// "not valid MessagePack at byte N: <why>" for a failed read (of at most `max_depth` levels).
std::string describe(const Reader::Failure& failure, std::size_t max_depth);

/// Parses exactly one MessagePack value filling all of `bytes`, with at most `max_depth` nested
/// arrays and maps. A bin or str is copied in one block, and nothing is allocated by a declared
/// count before the bytes are there. Errors: ditask::Error (describe()'s text, or "<n> bytes
/// after the value").
nlohmann::json read_json(std::span<const std::uint8_t> bytes, std::size_t max_depth);

/// Checks the one value starting at `pos` as read_json would, without building it; returns the
/// offset just past it. Errors: as read_json.
std::size_t skip_value(std::span<const std::uint8_t> bytes, std::size_t pos, std::size_t max_depth);

}  // namespace ditask::detail::codec
