// SPDX-License-Identifier: MIT
// The RPC engine's service thread (call timeouts, handle messages, objects of a node that left)
// starts with its first job, not with the task: most workers make no remote call, and a thread
// each is a cost every worker's start pays (docs/rpc.md "Where calls run").
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "rpc/rpc_engine.hpp"

namespace {

using ditask::detail::RpcEngine;
using namespace std::chrono_literals;

/// A transport whose peers never answer: it counts what is sent.
class SilentTransport final : public ditask::detail::Transport {
 public:
  std::string_view name() const noexcept override { return "silent"; }
  void attach(ditask::detail::Sink) override {}
  void detach() override {}
  void wait_ready() override {}
  void send(const ditask::detail::SendTarget&, std::string_view, const ditask::EventArgs&) override { ++sent; }
  void send_packed(const ditask::detail::SendTarget&, std::string_view, std::span<const std::uint8_t>) override {
    ++sent;
  }
  std::vector<ditask::PeerInfo> peers() const override { return {}; }
  ditask::TransportStats stats() const override { return {}; }
  void shutdown(bool) noexcept override {}
  int sent = 0;
};

std::shared_ptr<RpcEngine> started_engine(const std::shared_ptr<SilentTransport>& transport) {
  auto engine = std::make_shared<RpcEngine>(transport, RpcEngine::Self{0, nullptr, {}});
  engine->start();
  return engine;
}

}  // namespace

TEST_CASE("rpc engine: no service thread until a call can time out, then the thread times it out",
          "[rpc][unit]") {
  auto transport = std::make_shared<SilentTransport>();
  auto engine = started_engine(transport);
  CHECK_FALSE(engine->service_started());
  const auto call = engine->begin(ditask::Callee(1).within(20ms), "echo");
  CHECK(engine->service_started());
  const std::vector<std::uint8_t> wire{0x90};
  engine->send(call, &wire, nullptr);
  CHECK(transport->sent == 1);
  REQUIRE(call.state->wait(std::chrono::milliseconds::max()));  // no answer comes: only the timeout ends it
  CHECK(engine->stats().timed_out == 1);
  engine->stop();
}

TEST_CASE("rpc engine: an engine that never needed its service thread stops, and refuses calls after",
          "[rpc][unit]") {
  auto transport = std::make_shared<SilentTransport>();
  auto engine = started_engine(transport);
  engine->stop();
  CHECK_FALSE(engine->service_started());
  const auto call = engine->begin(ditask::Callee(1).within(20ms), "echo");
  CHECK(call.state->done());  // refused at once: stopping
  CHECK_FALSE(engine->service_started());
}

TEST_CASE("rpc engine: a call with a shorter timeout, made after a longer one, times out first", "[rpc][unit]") {
  auto transport = std::make_shared<SilentTransport>();
  auto engine = started_engine(transport);
  const std::vector<std::uint8_t> wire{0x90};
  const auto slow = engine->begin(ditask::Callee(1).within(1h), "echo");
  engine->send(slow, &wire, nullptr);
  const auto quick = engine->begin(ditask::Callee(1).within(20ms), "echo");  // its deadline is the earlier
  engine->send(quick, &wire, nullptr);
  REQUIRE(quick.state->wait(std::chrono::milliseconds::max()));  // only its timeout ends it
  CHECK(engine->stats().timed_out == 1);
  CHECK_FALSE(slow.state->done());
  engine->stop();  // fails the call still pending
  CHECK(slow.state->done());
  CHECK(engine->stats().timed_out == 1);
}
