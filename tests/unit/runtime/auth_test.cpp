// SPDX-License-Identifier: MIT
// The token challenge-response: the HMAC primitive against RFC 4231, nonces, and proofs that fail
// for a wrong token, nonce, node id, swapped roles or a reflected proof.
#include "mesh/auth.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::string hex(const std::array<std::uint8_t, 32>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const auto b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0x0f];
  }
  return out;
}

Bytes auth_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }

bool is_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// Two nodes of one run: A (node 1) and B (node 2), each with its own nonce.
struct Pair {
  std::string token = "s3cret-token";
  std::string nonce_a = mesh::make_nonce();
  std::string nonce_b = mesh::make_nonce();
  std::int64_t id_a = 1;
  std::int64_t id_b = 2;
  /// What A sends to B: answers B's challenge.
  std::string proof_a() const { return mesh::auth_proof(token, nonce_b, nonce_a, id_a); }
  /// What B sends to A.
  std::string proof_b() const { return mesh::auth_proof(token, nonce_a, nonce_b, id_b); }
  /// B's check of A's proof.
  bool b_accepts(const std::string& proof) const {
    return mesh::verify_proof(token, nonce_b, nonce_a, id_a, proof);
  }
  /// A's check of B's proof.
  bool a_accepts(const std::string& proof) const {
    return mesh::verify_proof(token, nonce_a, nonce_b, id_b, proof);
  }
};

}  // namespace

TEST_CASE("auth: hmac_sha256 matches RFC 4231", "[mesh][auth]") {
  // Test case 1: key = 20 bytes of 0x0b, data = "Hi There".
  CHECK(hex(mesh::hmac_sha256(std::string(20, '\x0b'), auth_bytes("Hi There"))) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: key = "Jefe", data = "what do ya want for nothing?".
  CHECK(hex(mesh::hmac_sha256("Jefe", auth_bytes("what do ya want for nothing?"))) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block size (131 bytes of 0xaa) is hashed first.
  CHECK(
      hex(mesh::hmac_sha256(std::string(131, '\xaa'),
                            auth_bytes("Test Using Larger Than Block-Size Key - Hash Key First"))) ==
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("auth: nonces are 64 lowercase hex characters and never repeat", "[mesh][auth]") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const auto nonce = mesh::make_nonce();
    CHECK(nonce.size() == mesh::kNonceHexChars);
    CHECK(is_lower_hex(nonce));
    seen.insert(nonce);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("auth: a proof is HMAC-SHA256 over the documented message", "[mesh][auth]") {
  const std::string message("ditask-auth-v1\0chal\0mine\0-42\0", 29);
  CHECK(mesh::auth_proof("tok", "chal", "mine", -42) ==
        hex(mesh::hmac_sha256("tok", auth_bytes(message))));
  const auto proof = mesh::auth_proof("tok", "chal", "mine", 7);
  CHECK(proof.size() == mesh::kProofHexChars);
  CHECK(is_lower_hex(proof));
  CHECK(proof == mesh::auth_proof("tok", "chal", "mine", 7));
}

TEST_CASE("auth: each side's proof verifies at the other side", "[mesh][auth]") {
  const Pair p;
  CHECK(p.b_accepts(p.proof_a()));
  CHECK(p.a_accepts(p.proof_b()));
}

TEST_CASE("auth: a wrong token, nonce or node id fails", "[mesh][auth]") {
  const Pair p;
  const auto proof = p.proof_a();
  CHECK_FALSE(mesh::verify_proof("s3cret-tokeN", p.nonce_b, p.nonce_a, p.id_a, proof));
  CHECK_FALSE(mesh::verify_proof("s3cret-token ", p.nonce_b, p.nonce_a, p.id_a, proof));
  CHECK_FALSE(mesh::verify_proof(p.token, mesh::make_nonce(), p.nonce_a, p.id_a, proof));
  CHECK_FALSE(mesh::verify_proof(p.token, p.nonce_b, mesh::make_nonce(), p.id_a, proof));
  CHECK_FALSE(mesh::verify_proof(p.token, p.nonce_b, p.nonce_a, p.id_a + 1, proof));
  CHECK_FALSE(mesh::verify_proof(p.token, p.nonce_b, p.nonce_a, -p.id_a, proof));
  // A proof made with another token does not pass with ours.
  CHECK_FALSE(p.b_accepts(mesh::auth_proof("guess", p.nonce_b, p.nonce_a, p.id_a)));
}

TEST_CASE("auth: swapped roles and reflected proofs fail", "[mesh][auth]") {
  const Pair p;
  // B's own proof echoed back to B as if A had made it.
  CHECK_FALSE(p.b_accepts(p.proof_b()));
  // A's proof sent back to A.
  CHECK_FALSE(p.a_accepts(p.proof_a()));
  // Nonces in each other's place (challenge and own nonce swapped).
  CHECK_FALSE(p.b_accepts(mesh::auth_proof(p.token, p.nonce_a, p.nonce_b, p.id_a)));
  // Even when the reflector claims the victim's node id, the swapped nonces keep them apart.
  CHECK_FALSE(mesh::verify_proof(p.token, p.nonce_b, p.nonce_a, p.id_b, p.proof_b()));
}

TEST_CASE("auth: the NUL separators keep field boundaries apart", "[mesh][auth]") {
  CHECK(mesh::auth_proof("t", "ab", "c", 1) != mesh::auth_proof("t", "a", "bc", 1));
  CHECK(mesh::auth_proof("t", "a", "b1", 2) != mesh::auth_proof("t", "a", "b", 12));
}

TEST_CASE("auth: malformed proofs and an empty token fail closed", "[mesh][auth]") {
  const Pair p;
  const auto proof = p.proof_a();
  CHECK_FALSE(p.b_accepts(""));
  CHECK_FALSE(p.b_accepts(proof.substr(0, 63)));
  CHECK_FALSE(p.b_accepts(proof + "0"));
  std::string upper = proof;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](char c) { return c >= 'a' && c <= 'f' ? static_cast<char>(c - 32) : c; });
  if (upper != proof) {
    CHECK_FALSE(p.b_accepts(upper));
  }
  std::string not_hex = proof;
  not_hex[10] = 'g';
  CHECK_FALSE(p.b_accepts(not_hex));
  std::string one_off = proof;
  one_off.back() = one_off.back() == '0' ? '1' : '0';
  CHECK_FALSE(p.b_accepts(one_off));
  CHECK_FALSE(mesh::verify_proof("", p.nonce_b, p.nonce_a, p.id_a, proof));
  CHECK_THROWS_WITH(mesh::auth_proof("", p.nonce_b, p.nonce_a, p.id_a),
                    "the mesh auth token is empty");
}
