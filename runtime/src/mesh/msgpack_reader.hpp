// SPDX-License-Identifier: MIT
// A MessagePack -> nlohmann::json reader for the receive path. Same values as json::from_msgpack
// (strict), but it copies a bin or str in one block (nlohmann reads them byte by byte), never
// allocates by a declared count before the bytes are there, and limits nesting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "ditask/export.hpp"

namespace ditask::detail::mesh {

/// Parses exactly one MessagePack value filling all of `bytes`. Errors: ditask::Error with the
/// reason (truncated, trailing bytes, invalid byte 0xc1, a non-string map key, nesting deeper
/// than `max_depth`).
nlohmann::json read_msgpack(std::span<const std::uint8_t> bytes, std::size_t max_depth);

/// Checks the one MessagePack value starting at `pos` by the rules of read_msgpack, without
/// building it; returns the offset just past it. Errors: as read_msgpack.
std::size_t skip_msgpack(std::span<const std::uint8_t> bytes, std::size_t pos, std::size_t max_depth);

}  // namespace ditask::detail::mesh
