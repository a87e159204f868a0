// SPDX-License-Identifier: MIT
// One mesh Link on its own, over a socketpair: acknowledgements, the ack timer and the bye, with
// the test writing and reading the peer's side by hand.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "codec/envelope.hpp"
#include "mesh/connection.hpp"
#include "mesh/frame.hpp"
#include "mesh/link_limits.hpp"
#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
using namespace std::chrono_literals;

namespace {

/// A Link over one end of a socketpair, with the test holding the other end (`peer`). The Owner
/// records what the link hands over; `deliver` acknowledges each event at once (as a dispatcher
/// that ran its handlers), otherwise events stay unhandled; a bye closes the link, as the mesh does.
struct LoneLink final : mesh::Link::Owner {
  boost::asio::io_context io;
  int peer = -1;
  bool deliver;
  std::shared_ptr<mesh::Link> link;
  std::mutex mutex;
  std::condition_variable changed;
  int events = 0;               // guarded by mutex
  std::optional<std::string> closed;  // guarded by mutex: on_closed's reason

  explicit LoneLink(bool deliver_events) : deliver(deliver_events) {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    peer = fds[1];
    mesh::Socket socket(io, boost::asio::generic::stream_protocol(AF_UNIX, SOCK_STREAM), fds[0]);
    link = std::make_shared<mesh::Link>(std::move(socket), "peer", "", "", *this, 1 << 20, 1 << 20, 10s);
    link->start();
    link->stop_hello_timer();  // no handshake here: only frames
  }
  ~LoneLink() override {
    if (peer >= 0) {
      ::close(peer);
    }
  }
  void on_frame(const std::shared_ptr<mesh::Link>& l, mesh::Frame&& frame) override {
    if (frame.type == mesh::FrameType::bye) {
      l->close_here("bye");
      return;
    }
    if (frame.type == mesh::FrameType::event) {
      if (deliver) {
        l->done(frame.seq, frame.topic.size() + frame.payload.size(), true);
      }
      std::lock_guard lock(mutex);
      ++events;
      changed.notify_all();
    }
  }
  void on_read_batch_end(const std::shared_ptr<mesh::Link>&) override {}
  void on_closed(const std::shared_ptr<mesh::Link>&, const std::string& reason, std::uint64_t) override {
    std::lock_guard lock(mutex);
    closed = reason;
    changed.notify_all();
  }
  void on_acked(std::uint64_t) override {}
  void on_unhandled() override {}

  /// Reads what the link writes until a frame satisfies `last` (at most 20 s for each read);
  /// returns every frame read.
  template <class Pred>
  std::vector<mesh::Frame> read_until(Pred last) const {
    mesh::FrameDecoder decoder(1 << 20);
    std::vector<mesh::Frame> frames;
    while (frames.empty() || !last(frames.back())) {
      pollfd readable{peer, POLLIN, 0};
      REQUIRE(::poll(&readable, 1, 20000) == 1);
      std::uint8_t chunk[4096];
      const ssize_t n = ::read(peer, chunk, sizeof chunk);
      REQUIRE(n > 0);
      for (auto& f : decoder.feed(std::span<const std::uint8_t>(chunk, static_cast<std::size_t>(n))).frames) {
        if (frames.empty() || !last(frames.back())) {
          frames.push_back(std::move(f));
        }
      }
    }
    return frames;
  }

  /// Writes `frames` to the link in one write.
  void send(const std::vector<mesh::Frame>& frames) const {
    std::vector<std::uint8_t> bytes;
    for (const auto& f : frames) {
      const auto one = mesh::encode(f);
      bytes.insert(bytes.end(), one.begin(), one.end());
    }
    REQUIRE(::write(peer, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
};

mesh::Frame event_frame(std::uint64_t seq) {
  return mesh::Frame{mesh::FrameType::event, 0, 1, seq, "task.x",
                     ditask::detail::codec::encode_event_args(ditask::EventArgs::from(1))};
}

mesh::Frame bye_frame() { return mesh::Frame{mesh::FrameType::bye, 0, 0, 0, "", mesh::encode_bye("bye")}; }

}  // namespace

TEST_CASE("link: events read together with the peer's bye leave no ack timer behind on the closed link",
          "[mesh][ack]") {
  LoneLink t(/*deliver_events=*/false);
  std::weak_ptr<mesh::Link> weak = t.link;
  t.link.reset();
  t.send({event_frame(1), event_frame(2), bye_frame()});
  // The link closes on the bye; afterwards nothing may be left for the io thread to do (an armed
  // ack timer would re-arm for ever, as the two events are never handled, and keep the link).
  t.io.run_for(20s);
  CHECK(t.io.stopped());
  CHECK(t.closed == std::optional<std::string>("bye"));
  CHECK(weak.expired());
}

TEST_CASE("link: after its bye a leaving link writes no ack, and lingers until the peer closes", "[mesh][ack]") {
  LoneLink t(/*deliver_events=*/true);
  std::thread io([&] { t.io.run(); });
  t.link->leave("bye", "bye", 20s);
  // The bye arrives, then the write side is shut.
  t.read_until([](const mesh::Frame& f) { return f.type == mesh::FrameType::bye; });
  // An event that crossed the bye is handled; its ack must not be written after the bye (the
  // write would fail and close the link at once instead of lingering for the peer's close).
  t.send({event_frame(1)});
  {
    std::unique_lock lock(t.mutex);
    REQUIRE(t.changed.wait_for(lock, 20s, [&] { return t.events == 1; }));
    // Long enough for the ack timer to fire a few times (it is what would write the ack).
    t.changed.wait_for(lock, mesh::link_limits::kAckDelay * 6, [&] { return t.closed.has_value(); });
    CHECK_FALSE(t.closed.has_value());
  }
  ::shutdown(t.peer, SHUT_WR);  // the peer's end of the stream: now the link closes
  {
    std::unique_lock lock(t.mutex);
    REQUIRE(t.changed.wait_for(lock, 20s, [&] { return t.closed.has_value(); }));
    CHECK(*t.closed == "bye");
  }
  t.link.reset();
  io.join();
}

TEST_CASE("link: handled events are acknowledged with no further traffic to ride on", "[mesh][ack]") {
  LoneLink t(/*deliver_events=*/true);
  std::thread io([&] { t.io.run(); });
  std::vector<mesh::Frame> events;
  for (std::uint64_t seq = 1; seq <= 10; ++seq) {
    events.push_back(event_frame(seq));
  }
  t.send(events);
  // Nothing else goes back to the peer: the ack goes alone, on the link's ack timer.
  const auto frames =
      t.read_until([](const mesh::Frame& f) { return f.type == mesh::FrameType::ack && f.seq == 10; });
  for (const auto& f : frames) {
    CHECK(f.type == mesh::FrameType::ack);
  }
  t.link->close("done");
  t.link.reset();
  io.join();
}

TEST_CASE("link: after a steady exchange whose acks rode on frames, the last ack still goes alone", "[mesh][ack]") {
  // Each round the peer sends an event and the link answers with one of its own, so the ack
  // rides on the answer and the ack timer's ticks find nothing to send (each comes later than
  // the one before). The exchange outlasts several ticks. Then the peer sends one event that
  // gets no answer: its ack must still go, alone, on the (longer) tick.
  LoneLink t(/*deliver_events=*/true);
  std::thread io([&] { t.io.run(); });
  const std::string topic = "answer";
  const std::vector<std::uint8_t> payload{0x90};
  const auto until = std::chrono::steady_clock::now() + 600ms;
  std::uint64_t seq = 0;
  std::uint64_t answers = 0;
  while (seq < 5 || std::chrono::steady_clock::now() < until) {
    t.send({event_frame(++seq)});
    {
      std::unique_lock lock(t.mutex);
      REQUIRE(t.changed.wait_for(lock, 20s, [&] { return t.events == static_cast<int>(seq); }));
    }
    ditask::detail::OutgoingEvent answer(topic, payload);
    ditask::detail::Deadline deadline(20s);
    REQUIRE(t.link->send_event(answer, 0, 0, false, deadline, false) == ditask::detail::SendResult::queued);
    ++answers;
    const auto frames = t.read_until([&](const mesh::Frame& f) {
      return f.type == mesh::FrameType::event && f.seq == answers;
    });
    CHECK(std::any_of(frames.begin(), frames.end(),
                      [&](const mesh::Frame& f) { return f.type == mesh::FrameType::ack && f.seq == seq; }));
  }
  t.send({event_frame(++seq)});
  const auto frames =
      t.read_until([&](const mesh::Frame& f) { return f.type == mesh::FrameType::ack && f.seq == seq; });
  CHECK(frames.back().seq == seq);
  t.link->close("done");
  t.link.reset();
  io.join();
}
