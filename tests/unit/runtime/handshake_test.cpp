// SPDX-License-Identifier: MIT
// One link's hello / auth / welcome exchange without sockets: two Handshake objects pass each
// other's frames, and each refusal reason is answered as the mesh must act on it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh/auth.hpp"
#include "mesh/handshake.hpp"

namespace mesh = ditask::detail::mesh;
using mesh::Handshake;

namespace {

mesh::HandshakeIdentity identity(std::int64_t node, std::string token = {}) {
  mesh::HandshakeIdentity id;
  id.hello.run_id = "unit";
  id.hello.node_id = node;
  id.hello.instance = static_cast<std::uint64_t>(100 + node);
  id.hello.max_frame_bytes = 1 << 20;
  id.hello.listen = "tcp://127.0.0.1:" + std::to_string(7000 + node);
  id.hello.auth = !token.empty();
  id.token = std::move(token);
  return id;
}

/// The hello payload `id` sends on a link whose challenge is `nonce`.
std::vector<std::uint8_t> hello_of(const mesh::HandshakeIdentity& id, const std::string& nonce) {
  mesh::Hello h = id.hello;
  h.nonce = nonce;
  return mesh::encode_hello(h);
}

std::span<const std::uint8_t> bytes(const std::string& text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

}  // namespace

TEST_CASE("handshake: without a token, hellos lead to accepting, and welcomes in either order establish once",
          "[handshake]") {
  const auto a = identity(0);
  const auto b = identity(1);
  Handshake at_a(false, "");  // node 0 accepted node 1's connection
  Handshake at_b(true, "");
  auto answer = at_a.on_hello(a, hello_of(b, ""));
  CHECK(answer.peer_node == 1);
  CHECK(answer.peer_listen == "tcp://127.0.0.1:7001");
  CHECK(answer.check_and_accept);
  CHECK(answer.send_auth.empty());
  CHECK_FALSE(answer.refuse);
  REQUIRE(at_a.hello());
  CHECK(at_a.hello()->node_id == 1);
  CHECK_FALSE(at_a.accepted());  // no welcome from node 1 yet
  CHECK(at_a.welcomed());        // now both: established
  at_a.mark_established();
  CHECK_FALSE(at_a.welcomed());  // a second welcome changes nothing
  CHECK(at_b.on_hello(b, hello_of(a, "")).check_and_accept);
  CHECK_FALSE(at_b.welcomed());
  CHECK(at_b.accepted());
}

TEST_CASE("handshake: with a token the dialler proves first, the acceptor checks and proves back", "[handshake]") {
  const auto a = identity(0, "secret");
  const auto b = identity(1, "secret");
  const std::string nonce_a = mesh::make_nonce();
  const std::string nonce_b = mesh::make_nonce();
  Handshake at_a(false, nonce_a);
  Handshake at_b(true, nonce_b);
  const auto a_heard = at_a.on_hello(a, hello_of(b, nonce_b));
  CHECK(a_heard.send_auth.empty());  // the accepting side waits for the proof
  CHECK_FALSE(a_heard.check_and_accept);
  const auto b_heard = at_b.on_hello(b, hello_of(a, nonce_a));
  REQUIRE(b_heard.send_auth.size() == mesh::kNonceHexChars);
  CHECK_FALSE(b_heard.check_and_accept);
  const auto a_checked = at_a.on_auth(a, bytes(b_heard.send_auth));
  CHECK_FALSE(a_checked.refuse);
  CHECK(a_checked.check_and_accept);
  REQUIRE_FALSE(a_checked.send_auth.empty());
  const auto b_checked = at_b.on_auth(b, bytes(a_checked.send_auth));
  CHECK_FALSE(b_checked.refuse);
  CHECK(b_checked.check_and_accept);
  CHECK(b_checked.send_auth.empty());
  // A second proof is not asked for.
  CHECK(at_b.on_auth(b, bytes(a_checked.send_auth)).refuse->ours == mesh::refusal::unexpected_auth().ours);
}

TEST_CASE("handshake: every reason to refuse is answered with the refusal and the peer's node id", "[handshake]") {
  const auto plain = identity(0);
  const auto guarded = identity(0, "secret");
  const auto ours = [](const Handshake::Answer& a) { return a.refuse ? a.refuse->ours : std::string("(none)"); };

  auto twin = identity(0);
  twin.hello.instance = 999;  // another process with our node id (the same instance is ourselves)
  Handshake own_id(false, "");
  auto answer = own_id.on_hello(plain, hello_of(twin, ""));
  CHECK(ours(answer) == mesh::refusal::own_node_id(0).ours);
  CHECK(answer.refuse_node == 0);

  Handshake unexpected(false, "");
  CHECK(ours(unexpected.on_hello(plain, hello_of(identity(2, "x"), mesh::make_nonce()))) == mesh::refusal::token_unexpected().ours);

  Handshake missing(false, mesh::make_nonce());
  answer = missing.on_hello(guarded, hello_of(identity(3), ""));
  CHECK(ours(answer) == mesh::refusal::token_missing().ours);
  CHECK(answer.refuse_node == 3);
  CHECK_FALSE(missing.hello());  // a refused hello is not the link's peer

  const std::string nonce = mesh::make_nonce();
  Handshake replayed(false, nonce);
  CHECK(ours(replayed.on_hello(guarded, hello_of(identity(4, "secret"), nonce))) ==
        mesh::refusal::nonce_replayed().ours);

  Handshake wrong(false, mesh::make_nonce());
  REQUIRE_FALSE(wrong.on_hello(guarded, hello_of(identity(5, "other"), mesh::make_nonce())).refuse);
  answer = wrong.on_auth(guarded, bytes(std::string(mesh::kNonceHexChars, '0')));
  CHECK(ours(answer) == mesh::refusal::wrong_token().ours);
  CHECK(answer.refuse_node == 5);

  Handshake early_auth(false, "");
  CHECK(ours(early_auth.on_auth(plain, bytes("proof"))) == mesh::refusal::unexpected_auth().ours);

  Handshake twice(false, "");
  REQUIRE(twice.on_hello(plain, hello_of(identity(6), "")).check_and_accept);
  answer = twice.on_hello(plain, hello_of(identity(6), ""));
  CHECK(ours(answer) == mesh::refusal::second_hello().ours);
  CHECK(answer.refuse_node == 6);

  auto other_version = identity(7);
  other_version.hello.version = mesh::kWireVersion + 1;
  Handshake version(false, "");
  answer = version.on_hello(plain, hello_of(other_version, ""));
  CHECK(ours(answer) == mesh::refusal::version(mesh::kWireVersion + 1, mesh::kWireVersion).ours);
  CHECK_FALSE(answer.refuse_node);  // of another version's hello only its version means anything

  Handshake garbage(false, "");
  const std::vector<std::uint8_t> junk{0xc1, 0x00};
  answer = garbage.on_hello(plain, junk);
  REQUIRE(answer.close);
  CHECK_THAT(*answer.close, Catch::StartsWith("malformed hello"));
  CHECK_FALSE(answer.refuse);
}

TEST_CASE("handshake: once refused, later frames change nothing", "[handshake]") {
  const auto a = identity(0);
  Handshake refused_early(false, "");
  REQUIRE(refused_early.on_auth(a, bytes("proof")).refuse);  // an auth before any hello
  refused_early.mark_refused();
  const auto answer = refused_early.on_hello(a, hello_of(identity(1), ""));
  CHECK_FALSE(answer.check_and_accept);
  CHECK_FALSE(answer.refuse);
  CHECK_FALSE(refused_early.hello());
  Handshake refused_late(true, "");
  REQUIRE(refused_late.on_hello(a, hello_of(identity(2), "")).check_and_accept);
  refused_late.mark_refused();  // e.g. a duplicate node id found by the peer table
  CHECK_FALSE(refused_late.accepted());
  CHECK_FALSE(refused_late.welcomed());
}
