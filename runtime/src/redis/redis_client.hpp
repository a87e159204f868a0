// SPDX-License-Identifier: MIT
// One hiredis asynchronous connection driven by an Asio io_context: its socket is watched with
// async_wait (no polling loop), its commands are pipelined, and its end is reported once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

struct redisAsyncContext;
struct redisReply;

namespace ditask::detail::redis {

/// Thread: the io_context's thread only (hiredis is not thread-safe).
class RedisClient {
 public:
  /// A reply, or null when the connection ended before it came.
  using Reply = std::function<void(redisReply*)>;
  /// The raw callback of the hot path (PUBLISH): no std::function per command.
  using RawCallback = void (*)(redisAsyncContext*, void* reply, void* privdata);

  /// `on_up`: connected (before any reply). `on_down(why)`: the connection ended (refused, lost,
  /// or closed by close()); called once per open(), never from inside a call to this object.
  RedisClient(boost::asio::io_context& io, std::function<void()> on_up, std::function<void(std::string)> on_down);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  /// Starts connecting to host:port. False (with `error`) when hiredis refuses at once.
  bool open(const std::string& host, int port, std::string& error);
  /// True from open() until the end is reported.
  bool is_open() const noexcept { return ctx_ != nullptr; }
  /// Sends a command; `reply` runs with its answer (or null). False when not open.
  bool command(const std::vector<std::string>& argv, Reply reply);
  /// command() with a raw callback and up to three arguments. False when not open.
  bool command_raw(RawCallback fn, void* privdata, std::string_view a, std::string_view b = {},
                   std::string_view c = {});
  /// SUBSCRIBE `channel`: `message` runs with the confirmation and with every message on it
  /// (an array reply), and with null when the connection ends. False when not open.
  bool subscribe(const std::string& channel, Reply message);
  /// From now on replies are read at most every `pause`, by a timer and only while some are due,
  /// and the socket is not watched by the io_context: a reply wakes no thread. For a connection
  /// whose replies only count (PUBLISH). Writes go out from the thread that holds the guard
  /// (write_held) or a posted write; one the socket does not take waits on a watch made for it.
  /// Caller holds the guard (if any); the io_context's thread or the guard's holder only.
  void set_read_pause(std::chrono::microseconds pause);
  /// The lock that every use of this client holds (recursive: reply callbacks issue commands).
  /// Set: other threads may use the client while they hold it too; its socket handlers take it.
  /// Set before open().
  void set_guard(std::recursive_mutex* guard) noexcept { guard_ = guard; }
  /// From hold_writes() to write_held(), commands only queue (the io thread is not woken to write
  /// them); write_held() writes them on the calling thread, the io thread finishing what the
  /// socket does not take. Caller holds the guard.
  void hold_writes() noexcept;
  void write_held() noexcept;
  /// Runs after each read of the socket whose replies ran (a batch ends). Set before open().
  void set_after_read(std::function<void()> fn) { after_read_ = std::move(fn); }
  /// What the owner of a raw callback's client is (RawCallback gets the redisAsyncContext, whose
  /// `data` is this client, or null while it is destroyed: then do nothing).
  void set_owner(void* owner) noexcept { owner_ = owner; }
  void* owner() const noexcept { return owner_; }
  /// Ends the connection after pending replies (on_down follows). Idempotent.
  void close() noexcept;

 private:
  struct Watch;
  static void on_connect(const redisAsyncContext* ctx, int status);
  static void on_disconnect(const redisAsyncContext* ctx, int status);
  static void on_reply(redisAsyncContext* ctx, void* reply, void* privdata);
  static void on_message(redisAsyncContext* ctx, void* reply, void* privdata);
  void ended(std::string why);

  boost::asio::io_context& io_;
  std::function<void()> on_up_;
  std::function<void(std::string)> on_down_;
  redisAsyncContext* ctx_ = nullptr;
  std::shared_ptr<Watch> watch_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::function<void()> after_read_;
  void* owner_ = nullptr;
  std::chrono::microseconds read_pause_{0};
  std::recursive_mutex* guard_ = nullptr;
  std::vector<std::unique_ptr<Reply>> subscriptions_;  // their callbacks, for as long as the connection
};

/// For a thread of the transport's own: SIGPIPE stays blocked on it, so its writes need not
/// block it each time (a write to a closed connection fails with EPIPE either way).
void block_sigpipe_on_this_thread() noexcept;

/// The text of an error reply (or "no reply"), for messages.
std::string reply_error(const redisReply* reply);

}  // namespace ditask::detail::redis
