// SPDX-License-Identifier: MIT
// Shared-token challenge-response for the mesh handshake (HMAC-SHA256, OpenSSL libcrypto).
//
// Each side puts a fresh nonce in its hello. After reading the peer's hello, a node with a token
// sends an auth frame holding auth_proof(token, peer's nonce, own nonce, own node id), and checks
// the peer's auth frame with verify_proof. The MAC covers, NUL-separated and NUL-terminated:
//
//   "ditask-auth-v1" \0 challenge \0 prover's nonce \0 decimal(prover's node id) \0
//
// where challenge is the verifier's nonce. It does not cover the run id (hello_refusal checks
// that). Nonces are lowercase hex (decode_hello enforces it), so the message reads one way only.
//
// Reflection: our own proof echoed back does not verify, because the challenge and nonce swap
// places. The caller must still refuse (before proving anything):
//   - a peer nonce equal to our nonce on this connection (then the two messages could coincide
//     when the peer also claims our node id), and
//   - a peer nonce equal to the nonce of any other handshake of ours still in progress, or else
//     let only the dialling side prove first (the accepting side proves after verifying). Without
//     one of these, an attacker holding two connections to us could relay our proof from one to
//     the other while claiming our node id.
//
// Pure code: no sockets, no threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ditask/export.hpp"

namespace ditask::detail::mesh {

/// Length of make_nonce()'s result and of a proof (hex of 32 bytes).
inline constexpr std::size_t kNonceHexChars = 64;
inline constexpr std::size_t kProofHexChars = 64;

/// 32 random bytes from RAND_bytes, as 64 lowercase hex characters. Thread: any.
/// Errors: ditask::Error when the random generator fails.
std::string make_nonce();

/// HMAC-SHA256 of `data` keyed by `key` (RFC 2104), the raw 32 bytes. Thread: any.
/// Errors: ditask::Error when libcrypto fails (the message never shows the key).
std::array<std::uint8_t, 32> hmac_sha256(std::string_view key,
                                                    std::span<const std::uint8_t> data);

/// The proof a node sends after reading the peer's hello: hex HMAC-SHA256 keyed by `token` over
/// the message above, where `challenge` is the PEER's nonce. Thread: any.
/// Errors: ditask::Error for an empty token, or when libcrypto fails.
std::string auth_proof(std::string_view token, std::string_view challenge,
                                  std::string_view own_nonce, std::int64_t own_node_id);

/// True when `proof` is what a holder of `token` answers to our nonce `challenge`, given the
/// peer's nonce and node id from its hello. Compares in constant time (CRYPTO_memcmp). False for
/// an empty token, and for a proof of the wrong length or not lowercase hex. Thread: any.
bool verify_proof(std::string_view token, std::string_view challenge,
                             std::string_view peer_nonce, std::int64_t peer_node_id,
                             std::string_view proof);

}  // namespace ditask::detail::mesh
