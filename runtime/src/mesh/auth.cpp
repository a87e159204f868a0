// SPDX-License-Identifier: MIT
#include "auth.hpp"

#include <dlfcn.h>

#include <cstring>
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

/// libcrypto, loaded on first use: only a mesh with a token needs it, and linking it into every
/// worker cost ~0.6 ms of dynamic loading per process (the launch benchmark).
struct Crypto {
  decltype(&::RAND_bytes) rand_bytes = nullptr;
  decltype(&::EVP_Q_mac) q_mac = nullptr;
  decltype(&::CRYPTO_memcmp) memcmp = nullptr;
  decltype(&::ERR_get_error) get_error = nullptr;
  decltype(&::ERR_clear_error) clear_error = nullptr;
  decltype(&::ERR_error_string_n) error_string_n = nullptr;
};

template <class F>
void bind(void* library, const char* name, F& fn) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) {
    throw Error(std::string("libcrypto.so.3 has no ") + name, "install OpenSSL 3 (Debian: libssl3)");
  }
  static_assert(sizeof fn == sizeof symbol);
  std::memcpy(&fn, &symbol, sizeof fn);  // object pointer -> function pointer, as POSIX allows
}

/// Errors: ditask::Error when libcrypto cannot be loaded (a later call tries again).
const Crypto& crypto() {
  static const Crypto loaded = [] {
    void* library = ::dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      throw Error(std::string("cannot load libcrypto.so.3 for the mesh token: ") + (why ? why : "unknown"),
                  "install OpenSSL 3 (Debian: libssl3)");
    }
    Crypto c;
    bind(library, "RAND_bytes", c.rand_bytes);
    bind(library, "EVP_Q_mac", c.q_mac);
    bind(library, "CRYPTO_memcmp", c.memcmp);
    bind(library, "ERR_get_error", c.get_error);
    bind(library, "ERR_clear_error", c.clear_error);
    bind(library, "ERR_error_string_n", c.error_string_n);
    return c;
  }();
  return loaded;
}

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
  const unsigned long code = crypto().get_error();
  crypto().clear_error();
  if (code == 0) {
    return fallback;
  }
  std::array<char, 256> text{};
  crypto().error_string_n(code, text.data(), text.size());
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
  if (crypto().rand_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
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
      crypto().q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(), data.data(),
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
  return crypto().memcmp(expected.data(), proof.data(), kProofHexChars) == 0;
}

}  // namespace ditask::detail::mesh
