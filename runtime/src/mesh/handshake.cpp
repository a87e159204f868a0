// SPDX-License-Identifier: MIT
#include "handshake.hpp"

#include <exception>

#include "auth.hpp"

namespace ditask::detail::mesh {

Handshake::Answer Handshake::on_hello(const HandshakeIdentity& me, std::span<const std::uint8_t> payload) {
  Answer answer;
  if (refused_) {
    return answer;  // refused: the link is leaving, nothing it sends counts any more
  }
  if (hello_) {
    answer.refuse = refusal::second_hello();
    answer.refuse_node = hello_->node_id;
    return answer;
  }
  Hello h;
  try {
    h = decode_hello(payload);
  } catch (const std::exception& e) {
    answer.close = e.what();
    return answer;
  }
  answer.peer_node = h.node_id;
  answer.peer_listen = h.listen;
  Hello mine = me.hello;
  mine.nonce = own_nonce_;
  // Of a hello of another version only "v" was decoded: its node id means nothing.
  const auto node = h.version == kWireVersion ? std::optional(h.node_id) : std::nullopt;
  const bool token = !me.token.empty();
  std::optional<Refusal> why = hello_refusal(mine, h);
  if (!why && h.node_id == me.hello.node_id) {
    why = refusal::own_node_id(h.node_id);
  } else if (!why && !token && h.auth) {
    why = refusal::token_unexpected();
  } else if (!why && token && !h.auth) {
    why = refusal::token_missing();
  } else if (!why && token && h.nonce == own_nonce_) {
    why = refusal::nonce_replayed();
  }
  if (why) {
    answer.refuse = std::move(why);
    answer.refuse_node = node;
    return answer;
  }
  hello_ = std::move(h);
  if (!token) {
    proof_ok_ = true;
    answer.check_and_accept = true;
  } else if (dialled_) {  // the dialling side proves first; the accepting side after checking it
    answer.send_auth = auth_proof(me.token, hello_->nonce, own_nonce_, me.hello.node_id);
  }
  return answer;
}

Handshake::Answer Handshake::on_auth(const HandshakeIdentity& me, std::span<const std::uint8_t> proof) {
  Answer answer;
  if (refused_) {
    return answer;
  }
  if (!hello_ || me.token.empty() || proof_ok_) {
    answer.refuse = refusal::unexpected_auth();
  } else if (!verify_proof(me.token, own_nonce_, hello_->nonce, hello_->node_id,
                           std::string(proof.begin(), proof.end()))) {
    answer.refuse = refusal::wrong_token();
  } else {
    proof_ok_ = true;
    if (!dialled_) {
      answer.send_auth = auth_proof(me.token, hello_->nonce, own_nonce_, me.hello.node_id);
    }
    answer.check_and_accept = true;
  }
  if (answer.refuse && hello_) {
    answer.refuse_node = hello_->node_id;
  }
  return answer;
}

bool Handshake::accepted() {
  accepted_ = true;
  return welcomed_ && !established_ && !refused_;
}

bool Handshake::welcomed() {
  welcomed_ = true;
  return accepted_ && !established_ && !refused_;
}

}  // namespace ditask::detail::mesh
