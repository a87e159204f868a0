// SPDX-License-Identifier: MIT
// The hello / auth / welcome exchange of one link, as a state machine without sockets: the
// mesh feeds it the frames that arrive and does what it answers (send a proof, check the peer
// table and accept, refuse, close). docs/mesh.md "Wire format".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hello.hpp"
#include "refusal.hpp"

namespace ditask::detail::mesh {

/// What this node brings to every handshake.
struct HandshakeIdentity {
  Hello hello;        ///< its own hello (without a nonce: each link has its own)
  std::string token;  ///< the job's token, or empty
};

/// One link's handshake. Order: both sides send a hello (with a fresh nonce when a token is
/// set); with a token, the dialling side proves first (auth frame), the accepting side checks
/// and proves back; each side then checks its peer table, accepts (welcome frame), and the link
/// is established once each side accepted the other. Thread: its link's io thread.
class Handshake {
 public:
  /// What the mesh does next.
  struct Answer {
    std::optional<std::int64_t> peer_node;  ///< its hello decoded: name the peer by this node id
    std::string peer_listen;               ///< and its listen address (may be empty)
    std::string send_auth;                 ///< send this proof in an auth frame (when non-empty)
    bool check_and_accept = false;         ///< check the peer table, then call accepted() or refuse
    std::optional<Refusal> refuse;         ///< refuse the peer (say bye with it)
    std::optional<std::int64_t> refuse_node;  ///< the refused peer's node id, when it is known
    std::optional<std::string> close;      ///< close at once, for this reason (undecodable hello)
  };

  /// `dialled`: this side connected. `own_nonce`: this link's challenge (empty without a token).
  Handshake(bool dialled, std::string own_nonce) : dialled_(dialled), own_nonce_(std::move(own_nonce)) {}

  /// The peer's hello frame arrived. Once refused, frames change nothing (empty answers).
  Answer on_hello(const HandshakeIdentity& me, std::span<const std::uint8_t> payload);
  /// The peer's auth frame arrived.
  Answer on_auth(const HandshakeIdentity& me, std::span<const std::uint8_t> proof);
  /// The mesh accepted the peer (and sends its welcome). True when the link is now established.
  bool accepted();
  /// The peer's welcome arrived. True when the link is now established.
  bool welcomed();
  /// The mesh refused the peer.
  void mark_refused() noexcept { refused_ = true; }
  /// The mesh joined the peer through this link.
  void mark_established() noexcept { established_ = true; }

  /// The peer's hello, once it passed every check of on_hello.
  const std::optional<Hello>& hello() const noexcept { return hello_; }
  /// This link's challenge nonce (empty without a token).
  const std::string& own_nonce() const noexcept { return own_nonce_; }
  /// True once the mesh accepted the peer and sent its welcome.
  bool has_accepted() const noexcept { return accepted_; }
  /// True once the mesh refused the peer.
  bool refused() const noexcept { return refused_; }
  /// True once the link is established.
  bool established() const noexcept { return established_; }

 private:
  const bool dialled_;
  const std::string own_nonce_;
  std::optional<Hello> hello_;
  bool proof_ok_ = false;
  bool accepted_ = false;
  bool welcomed_ = false;
  bool refused_ = false;
  bool established_ = false;
};

}  // namespace ditask::detail::mesh
