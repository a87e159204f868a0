// SPDX-License-Identifier: MIT
// The part of a Transport that is the same for every transport whose received events go through
// an Inbox: attaching the task's sink, the counters, and send() as an encoding for send_packed().
// Redis and the in-process transport derive from it; the mesh keeps its own (its counters sit on
// a cache line of their own at its end, and its send() hands self-delivery the arguments as they
// are).
#pragma once

#include <span>
#include <string_view>
#include <utility>

#include "../codec/envelope.hpp"
#include "inbox.hpp"
#include "transport.hpp"

namespace ditask::detail {

/// A Transport with an Inbox and TransportCounters. Thread: as Transport.
class InboxTransport : public Transport {
 public:
  void attach(Sink sink) override { inbox_.attach(std::move(sink)); }
  void detach() override { inbox_.detach(); }
  TransportStats stats() const override { return counters_.snapshot(); }
  /// Encodes `args` as an event payload, then send_packed().
  void send(const SendTarget& target, std::string_view event, const EventArgs& args) override {
    const auto payload = codec::encode_event_args(args);
    send_packed(target, event, payload);
  }

 protected:
  InboxTransport() = default;
  ~InboxTransport() override = default;
  InboxTransport(const InboxTransport&) = delete;
  InboxTransport& operator=(const InboxTransport&) = delete;

  /// Where received events and notices go (hand_over()).
  Inbox inbox_;
  /// Sent, acknowledged, received, lost, dropped, unhandled.
  TransportCounters counters_;
};

}  // namespace ditask::detail
