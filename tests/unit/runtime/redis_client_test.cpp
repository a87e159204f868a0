// SPDX-License-Identifier: MIT
// RedisClient against a real redis-server of the test's own: commands and replies, and the quiet
// mode (set_read_pause) that the transport's PUBLISH connection uses: replies read by a timer,
// the socket watched only while a write waits.
#include <hiredis/hiredis.h>

#include <atomic>
#include <csignal>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include "redis/redis_client.hpp"
#include "redis_server.hpp"

namespace {

using ditask::detail::redis::RedisClient;

/// One client on its own io thread; every use of it is posted there.
class ClientRig {
 public:
  explicit ClientRig(int port)
      : client_(io_, [this] { up_.set_value(); }, [this](std::string why) { down(std::move(why)); }) {
    thread_ = std::thread([this] { io_.run(); });
    std::string error;
    on_io([&] { REQUIRE(client_.open("127.0.0.1", port, error)); });
    REQUIRE(up_.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  }
  ~ClientRig() {
    on_io([this] { client_.close(); });
    work_.reset();
    io_.stop();
    thread_.join();
  }
  ClientRig(const ClientRig&) = delete;
  ClientRig& operator=(const ClientRig&) = delete;

  /// Runs `fn` on the io thread and waits for it.
  template <class Fn>
  void on_io(Fn fn) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  RedisClient& client() { return client_; }
  /// Guards the client with `guard` (other threads may then use it under the guard) and makes
  /// it quiet, as the transport's PUBLISH connection is.
  void make_quiet(std::recursive_mutex& guard) {
    on_io([&] {
      client_.set_guard(&guard);
      client_.set_read_pause(std::chrono::milliseconds(2));
    });
  }
  /// Counts one reply (a null one counts as failed).
  RedisClient::Reply counter() {
    return [this](redisReply* r) {
      std::lock_guard lock(mutex_);
      ++(r != nullptr && r->type != REDIS_REPLY_ERROR ? replies_ : failed_);
      changed_.notify_all();
    };
  }
  /// Waits until `n` replies came (or the connection ended); true when they did.
  bool wait_replies(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] { return replies_ >= n || !down_why_.empty(); }) &&
           replies_ >= n;
  }
  /// Waits until the connection ended; its reason.
  std::string wait_down() {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(60), [&] { return !down_why_.empty(); });
    return down_why_;
  }
  int replies() {
    std::lock_guard lock(mutex_);
    return replies_;
  }

 private:
  void down(std::string why) {
    std::lock_guard lock(mutex_);
    down_why_ = why.empty() ? "?" : why;
    changed_.notify_all();
  }
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ = boost::asio::make_work_guard(io_);
  std::promise<void> up_;
  RedisClient client_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int replies_ = 0, failed_ = 0;
  std::string down_why_;
};

}  // namespace

TEST_CASE("redis client: replies come on a connection whose socket the io_context watches", "[redis]") {
  ditask::test::RedisServer server;
  ClientRig rig(server.port());
  rig.on_io([&] {
    for (int i = 0; i < 1000; ++i) {
      REQUIRE(rig.client().command({"PUBLISH", "nobody", std::to_string(i)}, rig.counter()));
    }
  });
  CHECK(rig.wait_replies(1000));
}

TEST_CASE("redis client: a quiet connection reads its replies by timer, and one past the socket's room still goes",
          "[redis]") {
  ditask::test::RedisServer server;
  ClientRig rig(server.port());
  rig.on_io([&] { rig.client().set_read_pause(std::chrono::milliseconds(2)); });
  SECTION("commands issued one by one, each answered") {
    for (int i = 1; i <= 200; ++i) {
      rig.on_io([&] { REQUIRE(rig.client().command({"PUBLISH", "nobody", "x"}, rig.counter())); });
      REQUIRE(rig.wait_replies(i));  // no reply is left unread once nothing else comes
    }
  }
  SECTION("a burst far larger than a socket buffer (the write waits on a watch made for it)") {
    const std::string big(256 * 1024, 'b');
    rig.on_io([&] {
      for (int i = 0; i < 64; ++i) {  // 16 MiB
        REQUIRE(rig.client().command({"SET", "big" + std::to_string(i), big}, rig.counter()));
      }
    });
    CHECK(rig.wait_replies(64));
    rig.on_io([&] { REQUIRE(rig.client().command({"STRLEN", "big63"}, rig.counter())); });
    CHECK(rig.wait_replies(65));
  }
  SECTION("the server's end is found at the next command") {
    rig.on_io([&] { REQUIRE(rig.client().command({"PING"}, rig.counter())); });
    REQUIRE(rig.wait_replies(1));
    server.stop();
    rig.on_io([&] { (void)rig.client().command({"PING"}, rig.counter()); });
    CHECK_FALSE(rig.wait_down().empty());
    CHECK(rig.replies() == 1);
  }
}

TEST_CASE("redis client: a quiet connection written from another thread under its guard", "[redis]") {
  ditask::test::RedisServer server;
  ClientRig rig(server.port());
  std::recursive_mutex guard;
  rig.make_quiet(guard);
  std::atomic<int> refused{0};
  std::thread writer([&] {
    for (int i = 0; i < 5000; ++i) {
      const std::lock_guard lock(guard);
      rig.client().hold_writes();
      if (!rig.client().command({"PUBLISH", "nobody", std::to_string(i)}, rig.counter())) {
        ++refused;
      }
      rig.client().write_held();
    }
  });
  writer.join();
  CHECK(refused == 0);
  CHECK(rig.wait_replies(5000));
}

TEST_CASE("redis client: writing to a connection Redis has closed ends the connection, not the process (SIGPIPE)",
          "[redis]") {
  std::signal(SIGPIPE, SIG_DFL);  // as in a worker: the launcher resets it
  ditask::test::RedisServer server;
  ClientRig rig(server.port());
  std::recursive_mutex guard;
  rig.make_quiet(guard);
  rig.on_io([&] { REQUIRE(rig.client().command({"PING"}, rig.counter())); });
  REQUIRE(rig.wait_replies(1));
  server.stop();
  // One write per command, from this thread: the first draws the closed socket's reset, a later
  // one fails with EPIPE (and would raise SIGPIPE) unless the connection ended first.
  bool ended = false;
  for (int i = 0; i < 10000 && !ended; ++i) {
    const std::lock_guard lock(guard);
    rig.client().hold_writes();
    ended = !rig.client().command({"PING"}, rig.counter());
    rig.client().write_held();
  }
  CHECK_FALSE(rig.wait_down().empty());
  CHECK(rig.replies() == 1);
}

TEST_CASE("redis client: closed while still connecting, it reports its end once and frees its context once",
          "[redis]") {
  // hiredis frees a context that never connected without a disconnect callback: the client must
  // not keep (and later free again) what hiredis freed. A transport closes one client while the
  // other is still connecting whenever the other fails first, as when redis-server restarts.
  ditask::test::RedisServer server;
  boost::asio::io_context io;
  std::mutex mutex;
  std::condition_variable changed;
  int ups = 0, downs = 0;
  std::string why;
  auto client = std::make_unique<RedisClient>(
      io,
      [&] {
        std::lock_guard lock(mutex);
        ++ups;
      },
      [&](std::string reason) {
        std::lock_guard lock(mutex);
        ++downs;
        why = std::move(reason);
        changed.notify_all();
      });
  std::string error;
  REQUIRE(client->open("127.0.0.1", server.port(), error));
  client->close();  // before the io_context ran: hiredis has not seen the connect complete
  CHECK_FALSE(client->is_open());
  std::thread runner([&] { io.run(); });  // runs until nothing is left to do
  runner.join();
  {
    std::lock_guard lock(mutex);
    CHECK(downs == 1);
    CHECK(ups == 0);
    CHECK(why == "closed");
  }
  client.reset();  // freed once: a second free aborts (glibc) or is reported (ASan)
}
