// SPDX-License-Identifier: MIT
// At -O2 and above GCC 12 sees a null dereference in Asio's own executor comparison inlined
// into the hiredis hooks: a false positive (as for tests/bench/raw_mesh_bench.cpp).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "redis_client.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <array>
#include <ctime>
#include <utility>

extern "C" {
#include <hiredis/sds.h>  // no extern "C" of its own (and hiredis.h includes it outside its own)
}
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace ditask::detail::redis {

namespace {

// hiredis writes with write(2), and a worker runs with SIGPIPE at its default (the launcher
// resets it), so writing to a connection Redis has closed would kill the worker. Each write runs
// with SIGPIPE blocked on its thread, and a SIGPIPE it raised is taken before the mask returns;
// the write itself then fails with EPIPE and hiredis ends the connection.
thread_local bool t_sigpipe_blocked = false;

class SigpipeShield {
 public:
  SigpipeShield() {
    if (t_sigpipe_blocked) {
      return;
    }
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    restore_ = sigismember(&old_, SIGPIPE) == 0;
  }
  ~SigpipeShield() {
    if (!restore_) {
      return;
    }
    sigset_t pending;
    sigemptyset(&pending);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeShield(const SigpipeShield&) = delete;
  SigpipeShield& operator=(const SigpipeShield&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool restore_ = false;
};

// redisAsyncHandleWrite() without the risk of SIGPIPE: what hiredis has to write goes out with
// send(MSG_NOSIGNAL) first (one system call, as hiredis's own write), so hiredis then finds
// nothing left and only re-arms; a write it still has to do itself (connecting, a full socket,
// an error to report) runs shielded.
void write_shielded(redisAsyncContext* ctx) {
  redisContext* c = &ctx->c;
  if ((c->flags & REDIS_CONNECTED) != 0 && c->err == 0 && c->obuf != nullptr && sdslen(c->obuf) > 0) {
    const ssize_t n = ::send(c->fd, c->obuf, sdslen(c->obuf), MSG_NOSIGNAL);
    if (n > 0) {
      sdsrange(c->obuf, static_cast<int>(n), -1);
    }
  }
  if ((c->flags & REDIS_CONNECTED) == 0 || (c->obuf != nullptr && sdslen(c->obuf) > 0)) {
    const SigpipeShield shield;
    redisAsyncHandleWrite(ctx);
    return;
  }
  redisAsyncHandleWrite(ctx);
}

}  // namespace

void block_sigpipe_on_this_thread() noexcept {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  t_sigpipe_blocked = true;
}

/// hiredis's event hooks on one socket: a wait per direction, re-armed while hiredis wants it.
/// Quiet (set_read_pause): the socket is not registered with the io_context at all, so a reply
/// that comes wakes nobody; replies are read by a timer every pause while some are due, and a
/// write the socket does not take registers it for as long as it waits.
struct RedisClient::Watch : std::enable_shared_from_this<Watch> {
  Watch(boost::asio::io_context& io, int fd, redisAsyncContext* c, RedisClient* client)
      : descriptor(io, fd), pause_timer(io), ctx(c), owner(client) {}
  boost::asio::posix::stream_descriptor descriptor;
  boost::asio::steady_timer pause_timer;
  redisAsyncContext* ctx;
  RedisClient* owner;
  bool want_read = false, want_write = false, reading = false, writing = false, gone = false;
  bool held = false;   // hold_writes(): a wanted write is not armed
  bool quiet = false;  // not registered: see above
  std::array<char, 16384> input{};
  // The client's guard for the length of a handler, when it has one.
  std::unique_lock<std::recursive_mutex> lock_guard() const {
    return owner->guard_ != nullptr ? std::unique_lock<std::recursive_mutex>(*owner->guard_)
                                    : std::unique_lock<std::recursive_mutex>();
  }
  bool replies_due() const { return ctx->replies.head != nullptr; }

  /// Leaves the io_context's watch: a pending read or write wait ends (aborted) and is re-armed
  /// the quiet way.
  void go_quiet() {
    if (quiet || gone) {
      return;
    }
    quiet = true;
    boost::system::error_code ignored;
    descriptor.cancel(ignored);  // a pending wait ends aborted and re-arms the quiet way
    (void)descriptor.release();
    arm_read();
    arm_write();
  }

  void arm_read() {
    if (reading || gone || !want_read) {
      return;
    }
    if (quiet) {
      if (!replies_due()) {
        return;  // nothing to read: the next command's write arms it again
      }
      reading = true;
      pause_timer.expires_after(owner->read_pause_);
      pause_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        auto lock = self->lock_guard();
        self->reading = false;
        if (ec || self->gone) {
          return;
        }
        RedisClient* client = self->owner;
        redisAsyncHandleRead(self->ctx);  // a non-blocking read: nothing there yet is fine
        if (!self->gone) {
          self->arm_read();
        }
        if (client->after_read_) {
          client->after_read_();
        }
      });
      return;
    }
    reading = true;
    wait_readable();
  }
  // Reads into `input` and hands the bytes to hiredis's reader. A read, not a readiness wait: Asio
  // tries it at once and otherwise waits on the registration it made once, where a wait op would
  // re-register the socket with epoll (EPOLL_CTL_MOD) every time and wake once more for EPOLLOUT.
  void wait_readable() {
    descriptor.async_read_some(boost::asio::buffer(input),
                               [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                                 auto lock = self->lock_guard();
                                 self->reading = false;
                                 if (self->gone) {
                                   return;
                                 }
                                 if (ec == boost::asio::error::operation_aborted) {
                                   self->arm_read();  // go_quiet() ended it
                                   return;
                                 }
                                 RedisClient* client = self->owner;
                                 if (n > 0) {
                                   redisReaderFeed(self->ctx->c.reader, self->input.data(), n);
                                 }
                                 // Runs the replies fed; on an error or the end hiredis's own read
                                 // finds it again and ends the connection (gone).
                                 redisAsyncHandleRead(self->ctx);
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
    if (quiet) {
      // Called from inside hiredis (a command being queued): the write itself runs next.
      boost::asio::post(owner->io_, [self = shared_from_this()] {
        auto lock = self->lock_guard();
        self->writing = false;
        if (self->gone || !self->want_write || self->held) {
          return;
        }
        write_shielded(self->ctx);
        if (!self->gone && self->want_write) {
          self->wait_writable();  // the socket is full
        }
      });
      return;
    }
    wait_writable();
  }
  void wait_writable() {
    writing = true;
    if (quiet) {
      boost::system::error_code ignored;
      descriptor.assign(ctx->c.fd, ignored);  // registered while it waits
    }
    descriptor.async_wait(boost::asio::posix::stream_descriptor::wait_write,
                          [self = shared_from_this()](const boost::system::error_code& ec) {
                            auto lock = self->lock_guard();
                            self->writing = false;
                            if (self->gone) {
                              return;
                            }
                            if (self->quiet && self->descriptor.is_open()) {
                              (void)self->descriptor.release();  // its wait is over
                            }
                            if (ec == boost::asio::error::operation_aborted) {
                              self->arm_write();  // go_quiet() ended it
                              return;
                            }
                            if (ec || !self->want_write) {
                              return;
                            }
                            write_shielded(self->ctx);
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

void RedisClient::set_read_pause(std::chrono::microseconds pause) {
  read_pause_ = pause;
  if (watch_ && pause.count() > 0) {
    watch_->go_quiet();
  }
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
    write_shielded(ctx_);
  }
  watch->held = false;
  if (!watch->gone) {
    watch->arm_write();  // what the socket did not take, the io thread writes
  }
}

void RedisClient::close() noexcept {
  if (ctx_ == nullptr) {
    return;
  }
  if ((ctx_->c.flags & REDIS_CONNECTED) == 0) {
    // Still connecting: hiredis would free the context at once without a disconnect callback
    // (it calls that only for a connected one), leaving ctx_ to be freed again later. Free it
    // here and report the end as a disconnect would.
    redisAsyncContext* ctx = std::exchange(ctx_, nullptr);
    ctx->data = nullptr;  // the callbacks run while freeing see no client
    redisAsyncFree(ctx);
    ended("closed");
    return;
  }
  redisAsyncDisconnect(ctx_);
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
