// SPDX-License-Identifier: MIT
// Why a node refuses a peer at its hello, worded once for each side: the refusing node logs
// `refused node 1 (...): it sent no token and we require one`, the refused one reads the bye and
// logs `node 0 (...) refused us: we sent no token and it requires one`. Pure code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ditask/export.hpp"

namespace ditask::detail::mesh {

struct Hello;

/// One refusal, as each side says it.
struct Refusal {
  std::string ours;        ///< the refusing node's words ("it ... we ...")
  std::string theirs;      ///< the refused peer's words ("we ... it ..."), carried in the bye
  bool permanent = false;  ///< retrying cannot change it (token, run id, version)
  bool fails_both = false; ///< the job itself is misconfigured: the refusing node's start fails too
};

/// Every reason a hello or its proof is refused.
namespace refusal {
/// It speaks wire version `theirs`, we speak `ours`.
Refusal version(std::uint32_t theirs, std::uint32_t ours);
/// A hello that carries our own instance: we dialled ourselves.
Refusal ourselves();
/// Explicit run ids that differ.
Refusal run_id(const std::string& theirs, const std::string& ours);
/// Its job has `theirs` workers (--world-size), ours `ours`.
Refusal world_size(std::int64_t theirs, std::int64_t ours);
/// It claims our own node id.
Refusal own_node_id(std::int64_t id);
/// Another process with node id `id` is already connected (its attempt and address).
Refusal duplicate_node(std::int64_t id, std::int64_t attempt, const std::string& listen);
/// It requires a token and we have none.
Refusal token_unexpected();
/// We require a token and it sent none.
Refusal token_missing();
/// Its proof does not match our token.
Refusal wrong_token();
/// It sent back our own nonce.
Refusal nonce_replayed();
/// An auth frame we did not ask for.
Refusal unexpected_auth();
/// A second hello on one connection.
Refusal second_hello();
}  // namespace refusal

/// Why `mine` must refuse `theirs` from their hellos alone, or nullopt: another wire version, our
/// own instance, run ids that differ while both are explicit, or world sizes that differ while
/// both are given. Checked in that order.
std::optional<Refusal> hello_refusal(const Hello& mine, const Hello& theirs);

}  // namespace ditask::detail::mesh
