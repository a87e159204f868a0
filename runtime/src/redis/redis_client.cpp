// SPDX-License-Identifier: MIT
// At -O2 and above GCC 12 sees a null dereference in Asio's own executor comparison inlined
// into the hiredis hooks: a false positive (as for tests/bench/raw_mesh_bench.cpp).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "redis_client.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace ditask::detail::redis {

/// hiredis's event hooks on one socket: a wait per direction, re-armed while hiredis wants it.
struct RedisClient::Watch : std::enable_shared_from_this<Watch> {
  Watch(boost::asio::io_context& io, int fd, redisAsyncContext* c, RedisClient* client)
      : descriptor(io, fd), pause_timer(io), ctx(c), owner(client) {}
  boost::asio::posix::stream_descriptor descriptor;
  boost::asio::steady_timer pause_timer;
  redisAsyncContext* ctx;
  RedisClient* owner;
  bool want_read = false, want_write = false, reading = false, writing = false, gone = false;
  bool held = false;  // hold_writes(): a wanted write is not armed
  // The client's guard for the length of a handler, when it has one.
  std::unique_lock<std::recursive_mutex> lock_guard() const {
    return owner->guard_ != nullptr ? std::unique_lock<std::recursive_mutex>(*owner->guard_)
                                    : std::unique_lock<std::recursive_mutex>();
  }

  void arm_read() {
    if (reading || gone || !want_read) {
      return;
    }
    reading = true;
    if (owner->read_pause_.count() > 0) {
      // Replies wait in the socket for a moment and are read together.
      pause_timer.expires_after(owner->read_pause_);
      pause_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        auto lock = self->lock_guard();
        if (ec || self->gone) {
          self->reading = false;
          return;
        }
        self->wait_readable();
      });
      return;
    }
    wait_readable();
  }
  void wait_readable() {
    descriptor.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                          [self = shared_from_this()](const boost::system::error_code& ec) {
                            auto lock = self->lock_guard();
                            self->reading = false;
                            if (ec || self->gone || !self->want_read) {
                              return;
                            }
                            RedisClient* client = self->owner;
                            redisAsyncHandleRead(self->ctx);  // may end the connection (gone)
                            if (!self->gone) {
                              self->arm_read();
                            }
                            if (client->after_read_) {
                              client->after_read_();
                            }
                          });
  }
  void arm_write() {
    if (writing || gone || !want_write || held) {
      return;
    }
    writing = true;
    descriptor.async_wait(boost::asio::posix::stream_descriptor::wait_write,
                          [self = shared_from_this()](const boost::system::error_code& ec) {
                            auto lock = self->lock_guard();
                            self->writing = false;
                            if (ec || self->gone || !self->want_write) {
                              return;
                            }
                            redisAsyncHandleWrite(self->ctx);
                            if (!self->gone) {
                              self->arm_write();
                            }
                          });
  }
  static Watch* of(void* p) { return static_cast<Watch*>(p); }
  static void add_read(void* p) {
    of(p)->want_read = true;
    of(p)->arm_read();
  }
  static void del_read(void* p) { of(p)->want_read = false; }
  static void add_write(void* p) {
    of(p)->want_write = true;
    of(p)->arm_write();
  }
  static void del_write(void* p) { of(p)->want_write = false; }
  static void cleanup(void* p) {
    Watch* w = of(p);
    w->gone = true;
    w->want_read = w->want_write = false;
    boost::system::error_code ignored;
    w->pause_timer.cancel();
    w->descriptor.cancel(ignored);
    (void)w->descriptor.release();  // hiredis closes the socket itself
  }
};

RedisClient::RedisClient(boost::asio::io_context& io, std::function<void()> on_up, std::function<void(std::string)> on_down)
    : io_(io), on_up_(std::move(on_up)), on_down_(std::move(on_down)) {}

RedisClient::~RedisClient() {
  *alive_ = false;
  if (ctx_ != nullptr) {
    ctx_->data = nullptr;  // the callbacks hiredis runs while freeing see no client
    redisAsyncFree(ctx_);
    ctx_ = nullptr;
  }
}

bool RedisClient::open(const std::string& host, int port, std::string& error) {
  if (ctx_ != nullptr) {
    return true;
  }
  redisAsyncContext* ctx = redisAsyncConnect(host.c_str(), port);
  if (ctx == nullptr) {
    error = "out of memory";
    return false;
  }
  if (ctx->err != 0) {
    error = ctx->errstr;
    redisAsyncFree(ctx);
    return false;
  }
  ctx_ = ctx;
  ctx->data = this;
  watch_ = std::make_shared<Watch>(io_, ctx->c.fd, ctx, this);
  ctx->ev.data = watch_.get();
  ctx->ev.addRead = &Watch::add_read;
  ctx->ev.delRead = &Watch::del_read;
  ctx->ev.addWrite = &Watch::add_write;
  ctx->ev.delWrite = &Watch::del_write;
  ctx->ev.cleanup = &Watch::cleanup;
  redisAsyncSetConnectCallback(ctx, &RedisClient::on_connect);
  redisAsyncSetDisconnectCallback(ctx, &RedisClient::on_disconnect);
  return true;
}

void RedisClient::on_connect(const redisAsyncContext* ctx, int status) {
  auto* self = static_cast<RedisClient*>(ctx->data);
  if (self == nullptr) {
    return;
  }
  if (status != REDIS_OK) {
    // hiredis frees the context after this returns, without a disconnect callback.
    self->ctx_ = nullptr;
    self->ended(ctx->errstr[0] != '\0' ? std::string(ctx->errstr) : std::string("connection refused"));
    return;
  }
  boost::asio::post(self->io_, [self, alive = self->alive_] {
    if (*alive && self->ctx_ != nullptr && self->on_up_) {
      self->on_up_();
    }
  });
}

void RedisClient::on_disconnect(const redisAsyncContext* ctx, int status) {
  auto* self = static_cast<RedisClient*>(ctx->data);
  if (self == nullptr) {
    return;
  }
  self->ctx_ = nullptr;
  self->ended(status == REDIS_OK ? std::string("closed")
                                 : (ctx->errstr[0] != '\0' ? std::string(ctx->errstr) : std::string("connection lost")));
}

void RedisClient::ended(std::string why) {
  boost::asio::post(io_, [this, alive = alive_, why = std::move(why)] {
    if (*alive) {
      subscriptions_.clear();  // hiredis ran them with null already
      if (on_down_) {
        on_down_(why);
      }
    }
  });
}

void RedisClient::on_reply(redisAsyncContext* ctx, void* reply, void* privdata) {
  std::unique_ptr<Reply> fn(static_cast<Reply*>(privdata));
  if (ctx->data != nullptr && *fn) {
    (*fn)(static_cast<redisReply*>(reply));
  }
}

void RedisClient::on_message(redisAsyncContext* ctx, void* reply, void* privdata) {
  auto* fn = static_cast<Reply*>(privdata);
  if (ctx->data != nullptr && *fn) {
    (*fn)(static_cast<redisReply*>(reply));
  }
}

bool RedisClient::command(const std::vector<std::string>& argv, Reply reply) {
  if (ctx_ == nullptr) {
    return false;
  }
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* fn = new Reply(std::move(reply));
  if (redisAsyncCommandArgv(ctx_, &RedisClient::on_reply, fn, static_cast<int>(args.size()), args.data(),
                            lengths.data()) != REDIS_OK) {
    delete fn;
    return false;
  }
  return true;
}

bool RedisClient::command_raw(RawCallback fn, void* privdata, std::string_view a, std::string_view b,
                              std::string_view c) {
  if (ctx_ == nullptr) {
    return false;
  }
  const char* args[3] = {a.data(), b.data(), c.data()};
  const std::size_t lengths[3] = {a.size(), b.size(), c.size()};
  const int argc = c.empty() ? (b.empty() ? 1 : 2) : 3;
  return redisAsyncCommandArgv(ctx_, fn, privdata, argc, args, lengths) == REDIS_OK;
}

bool RedisClient::subscribe(const std::string& channel, Reply message) {
  if (ctx_ == nullptr) {
    return false;
  }
  subscriptions_.push_back(std::make_unique<Reply>(std::move(message)));
  const char* args[2] = {"SUBSCRIBE", channel.c_str()};
  const std::size_t lengths[2] = {9, channel.size()};
  if (redisAsyncCommandArgv(ctx_, &RedisClient::on_message, subscriptions_.back().get(), 2, args, lengths) != REDIS_OK) {
    subscriptions_.pop_back();
    return false;
  }
  return true;
}

void RedisClient::hold_writes() noexcept {
  if (watch_) {
    watch_->held = true;
  }
}

void RedisClient::write_held() noexcept {
  if (!watch_) {
    return;
  }
  const auto watch = watch_;  // the context may end while writing (then watch_ is stale)
  if (ctx_ != nullptr && !watch->gone && watch->want_write) {
    redisAsyncHandleWrite(ctx_);
  }
  watch->held = false;
  if (!watch->gone) {
    watch->arm_write();  // what the socket did not take, the io thread writes
  }
}

void RedisClient::close() noexcept {
  if (ctx_ != nullptr) {
    redisAsyncDisconnect(ctx_);
  }
}

std::string reply_error(const redisReply* reply) {
  if (reply == nullptr) {
    return "no reply (the connection ended)";
  }
  if (reply->type == REDIS_REPLY_ERROR && reply->str != nullptr) {
    return std::string(reply->str, reply->len);
  }
  return "unexpected reply";
}

}  // namespace ditask::detail::redis
