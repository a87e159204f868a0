// SPDX-License-Identifier: MIT
#include "auth.hpp"

#include <string>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "ditask/error.hpp"

namespace ditask::detail::mesh {
namespace {

constexpr std::string_view kAuthTag = "ditask-auth-v1";

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (const std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0x0f];
  }
  return out;
}

/// libcrypto's last error as text, or `fallback`; clears the thread's error queue.
std::string crypto_error(const char* fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) {
    return fallback;
  }
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

/// The bytes the proof's MAC covers (auth.hpp).
std::vector<std::uint8_t> auth_message(std::string_view challenge, std::string_view prover_nonce,
                                       std::int64_t prover_node_id) {
  const std::string node = std::to_string(prover_node_id);
  std::vector<std::uint8_t> out;
  out.reserve(kAuthTag.size() + challenge.size() + prover_nonce.size() + node.size() + 4);
  for (const std::string_view part : {kAuthTag, challenge, prover_nonce, std::string_view(node)}) {
    out.insert(out.end(), part.begin(), part.end());
    out.push_back(0);
  }
  return out;
}

}  // namespace

std::string make_nonce() {
  std::array<std::uint8_t, kNonceHexChars / 2> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw Error("cannot make an auth nonce: RAND_bytes failed: " +
                crypto_error("no entropy available"));
  }
  return to_hex(bytes);
}

std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::span<const std::uint8_t> data) {
  std::array<std::uint8_t, 32> mac{};
  std::size_t mac_len = 0;
  // OpenSSL 3 deprecates HMAC(); EVP_Q_mac is its one-shot replacement.
  const unsigned char* done =
      EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(), data.data(),
                data.size(), mac.data(), mac.size(), &mac_len);
  if (done == nullptr || mac_len != mac.size()) {
    throw Error("HMAC-SHA256 failed: " + crypto_error("unexpected MAC length"));
  }
  return mac;
}

std::string auth_proof(std::string_view token, std::string_view challenge,
                       std::string_view own_nonce, std::int64_t own_node_id) {
  if (token.empty()) {
    throw Error("the mesh auth token is empty");
  }
  return to_hex(hmac_sha256(token, auth_message(challenge, own_nonce, own_node_id)));
}

bool verify_proof(std::string_view token, std::string_view challenge, std::string_view peer_nonce,
                  std::int64_t peer_node_id, std::string_view proof) {
  if (token.empty() || proof.size() != kProofHexChars) {
    return false;
  }
  const std::string expected =
      to_hex(hmac_sha256(token, auth_message(challenge, peer_nonce, peer_node_id)));
  // Any non-hex or uppercase character simply differs from the lowercase expected text.
  return CRYPTO_memcmp(expected.data(), proof.data(), kProofHexChars) == 0;
}

}  // namespace ditask::detail::mesh
