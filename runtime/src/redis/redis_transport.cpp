// SPDX-License-Identifier: MIT
// The Redis transport's life: connecting (with backoff), logging in, subscribing, announcing
// this node, finding and watching its peers, and the goodbye. Sending: redis_route.cpp;
// receiving: redis_receive.cpp.
// At -O2 and above GCC 12 sees a null dereference in Asio's own executor comparison inlined
// into the hiredis hooks: a false positive (as for tests/bench/raw_mesh_bench.cpp).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "redis_transport.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <random>

#include <boost/asio/post.hpp>

#include "../batch_thread.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"

namespace ditask::detail::redis {

namespace {

constexpr auto kPresenceTtl = std::chrono::seconds(15);
constexpr auto kTick = std::chrono::seconds(1);
constexpr auto kMaxBackoff = std::chrono::seconds(2);
constexpr auto kShutdownWait = std::chrono::seconds(5);
constexpr auto kReplyPause = std::chrono::milliseconds(2);

std::uint64_t random_instance() {
  std::random_device random;
  return (static_cast<std::uint64_t>(random()) << 32) ^ random() ^ 1u;  // never 0 (0: no process)
}

bool is_error(const redisReply* reply) { return reply == nullptr || reply->type == REDIS_REPLY_ERROR; }

}  // namespace

RedisTransport::RedisTransport(NodeSettings common, RedisSettings server)
    : settings_(std::move(common)),
      server_(std::move(server)),
      instance_(random_instance()),
      own_channel_(channel_of(settings_.node_id)),
      control_channel_(server_.scope + ":ctl"),
      retry_timer_(io_),
      tick_timer_(io_),
      notice_timer_(io_),
      group_(settings_, "redis", counters_, world_beyond_local(settings_)),
      peers_(group_.table()) {
  // Every other worker of this launcher is expected (but those that finished before this one
  // started); a job of several launchers also waits for --world-size peers in all. Topology does
  // not apply: Redis reaches everyone.
  for (const auto& n : settings_.local_nodes) {
    if (n.node_id != settings_.node_id && settings_.finished_nodes.count(n.node_id) == 0) {
      Peers::Expected e;
      e.node = n.node_id;
      e.address = "redis";
      e.required = true;
      peers_.expect(std::move(e));
    }
  }
}

RedisTransport::~RedisTransport() { shutdown(false); }

void RedisTransport::start() {
  work_.emplace(io_.get_executor());
  boost::asio::post(io_, [this] { connect(); });
  thread_ = std::thread([this] {
    block_sigpipe_on_this_thread();
    become_batch_thread();
    io_.run();
  });
}

std::string RedisTransport::hello_text() const {
  std::lock_guard lock(mutex_);
  return hello_text_locked();
}

std::string RedisTransport::hello_text_locked() const {
  PeerRecord self{settings_.node_id, settings_.attempt, instance_, settings_.labels, ""};
  self.labels.insert("node." + std::to_string(settings_.node_id));
  self.world_size = own_world_size();
  return redis::hello_text(self, interest_);
}

void RedisTransport::set_interest(std::optional<std::set<std::string>> names) {
  {
    std::lock_guard lock(mutex_);
    if (names == interest_.names || shutting_down_) {
      return;
    }
    interest_.offer(interest_.version + 1, std::move(names));
    // The notice reaches the peers joined now; a later one gets this node's answer to its hello,
    // which carries the interest then. The presence key is kept current for operators.
    const std::string hello = hello_text_locked();
    Outgoing key{presence_key(settings_.node_id), {hello.begin(), hello.end()}, Outgoing::Kind::presence};
    const std::string text = interest_notice_text(settings_.node_id, instance_, interest_);
    Outgoing ctl{control_channel_, {text.begin(), text.end()}, Outgoing::Kind::control};
    queue_control_locked(std::move(key));
    queue_control_locked(std::move(ctl));
  }
  publish_here_or_post();
}

// ---- the connection ----

void RedisTransport::connect() {
  const std::lock_guard guard(pub_guard_);
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_ || !permanent_error_.empty()) {
      return;
    }
    link_ = Link::connecting;
  }
  ++generation_;
  const auto gen = generation_;
  clients_up_ = 0;
  subscriptions_confirmed_ = 0;
  pub_ready_ = false;
  auto up = [this, gen] {
    if (gen == generation_) {
      on_client_up();
    }
  };
  auto down = [this, gen](std::string why) {
    if (gen == generation_) {
      on_client_down(why);
    }
  };
  pub_ = std::make_unique<RedisClient>(io_, up, down);
  sub_ = std::make_unique<RedisClient>(io_, up, down);
  pub_->set_owner(this);
  pub_->set_guard(&pub_guard_);
  pub_->set_after_read([this] { hand_over_batch(); });
  sub_->set_after_read([this] { hand_over_batch(); });
  std::string error;
  if (!pub_->open(server_.host, server_.port, error) || !sub_->open(server_.host, server_.port, error)) {
    on_client_down(error);
  }
}

void RedisTransport::on_client_up() {
  const std::lock_guard guard(pub_guard_);
  if (++clients_up_ < 2) {
    return;
  }
  // Both sockets connected: log in (AUTH first: nothing else is answered before it); the
  // subscriptions follow once the command client's login worked (a refusal shows there).
  login(*pub_, true);
}

void RedisTransport::login(RedisClient& client, bool commands) {
  const std::lock_guard guard(pub_guard_);
  const auto gen = generation_;
  auto after_auth = [this, gen, commands, &client] {
    if (gen != generation_) {
      return;
    }
    if (!commands) {
      client.subscribe(control_channel_, [this, gen](redisReply* r) {
        if (gen == generation_) {
          on_control(r);
        }
      });
      client.subscribe(own_channel_, [this, gen](redisReply* r) {
        if (gen == generation_) {
          on_message(r);
        }
      });
      return;
    }
    auto selected = [this, gen](redisReply* r) {
      if (gen != generation_ || r == nullptr) {
        return;
      }
      if (is_error(r)) {
        const auto why = reply_error(r);
        if (why.starts_with("NOAUTH")) {
          fail_permanently("Redis at " + server_.where() + " refused the login: " + why,
                           "give its password: --redis-password, $DITASK_REDIS_PASSWORD or --redis-url");
        } else {
          fail_permanently("Redis at " + server_.where() + " has no database " + std::to_string(server_.db) + ": " + why,
                           "give a database index the server has (--redis-db, or the URL's /N)");
        }
        return;
      }
      pub_ready_ = true;
      login(*sub_, false);
    };
    if (server_.db != 0) {
      client.command({"SELECT", std::to_string(server_.db)}, selected);
    } else {
      client.command({"PING"}, selected);  // a NOAUTH refusal shows here
    }
  };
  if (server_.password.empty()) {
    after_auth();
    return;
  }
  std::vector<std::string> auth = {"AUTH"};
  if (!server_.user.empty()) {
    auth.push_back(server_.user);
  }
  auth.push_back(server_.password);
  client.command(auth, [this, gen, after_auth](redisReply* r) {
    if (gen != generation_ || r == nullptr) {
      return;
    }
    if (is_error(r)) {
      fail_permanently("Redis at " + server_.where() + " refused the login: " + reply_error(r),
                       "check --redis-password (or the user and password of --redis-url)");
      return;
    }
    after_auth();
  });
}

void RedisTransport::subscribed_one() {
  if (++subscriptions_confirmed_ == 2 && pub_ready_) {
    announce();
  }
}

void RedisTransport::announce() {
  const std::lock_guard guard(pub_guard_);
  // Subscribed first, announced after: a peer that hears this hello can publish to this node at
  // once. Every live peer answers it on this node's channel (on_hello), so the peers that were
  // there before are known by their answers: a presence key is never taken for a live process
  // (it outlives a killed one by up to its TTL).
  const auto gen = generation_;
  const std::string hello = hello_text();
  pub_->command({"SET", presence_key(settings_.node_id), hello, "PX", std::to_string(kPresenceTtl / std::chrono::milliseconds(1))},
                [](redisReply*) {});
  pub_->command({"PUBLISH", control_channel_, hello}, [this, gen](redisReply* r) {
    if (gen == generation_ && r != nullptr) {
      link_up();
    }
  });
}

void RedisTransport::link_up() {
  const std::lock_guard guard(pub_guard_);
  announced_ = true;
  // From now on the command client's replies only count (PUBLISH): read them in batches.
  pub_->set_read_pause(kReplyPause);
  backoff_ = std::chrono::milliseconds(0);
  if (lost_logged_) {
    DITASK_LOG(warn, "redis") << "reconnected to Redis at " << server_.where();
    lost_logged_ = false;
  }
  {
    std::lock_guard lock(mutex_);
    link_ = Link::up;
    reached_once_ = true;
    last_error_.clear();
  }
  changed_.notify_all();
  release_early_events();
  flush();
  tick_timer_.expires_after(kTick);
  tick_timer_.async_wait([this, gen = generation_](const boost::system::error_code& ec) {
    if (!ec && gen == generation_) {
      tick();
    }
  });
}

void RedisTransport::on_client_down(const std::string& why) {
  const std::lock_guard guard(pub_guard_);
  ++generation_;  // what the old clients still report is stale from now on
  tick_timer_.cancel();
  bool closing = false;
  {
    std::lock_guard lock(mutex_);
    closing = shutting_down_;
    if (!closing) {
      last_error_ = why;
      link_ = Link::down;
      for (auto& e : peers_.expected()) {
        if (e.conn != 0 && e.slot.confirmed) {
          e.slot.confirmed = false;  // until its hello comes again: it may be reconnecting too
          e.slot.unconfirmed_since = std::chrono::steady_clock::now();
        }
      }
    }
  }
  // The other client may still be open: close it (its report is stale now).
  if (pub_) {
    pub_->close();
  }
  if (sub_) {
    sub_->close();
  }
  if (closing) {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
    return;
  }
  if (reached_once_now() && !lost_logged_) {
    DITASK_LOG(warn, "redis") << "lost the connection to Redis at " << server_.where() << " (" << why
                                 << "); reconnecting";
    lost_logged_ = true;
  }
  changed_.notify_all();
  retry_later();
}

bool RedisTransport::reached_once_now() const {
  std::lock_guard lock(mutex_);
  return reached_once_;
}

void RedisTransport::retry_later() {
  backoff_ = std::min<std::chrono::milliseconds>(std::max<std::chrono::milliseconds>(backoff_ * 2, std::chrono::milliseconds(50)),
                                                 kMaxBackoff);
  retry_timer_.expires_after(backoff_);
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      connect();
    }
  });
}

void RedisTransport::fail_permanently(const std::string& message, const std::string& hint) {
  const std::lock_guard guard(pub_guard_);
  {
    std::lock_guard lock(mutex_);
    if (reached_once_) {
      // After start-up nobody waits in wait_ready to report it: the log does.
      DITASK_LOG(error, "redis") << message << " (" << hint << "); no more events go through Redis";
    }
    if (permanent_error_.empty()) {
      permanent_error_ = message;
      permanent_hint_ = hint;
    }
  }
  changed_.notify_all();
  ++generation_;
  pub_->close();
  sub_->close();
}

void RedisTransport::tick() {
  const std::lock_guard guard(pub_guard_);
  const auto gen = generation_;
  // This node's presence outlives a crash by at most the TTL; each peer's subscription says
  // whether its process still listens (a killed one leaves no bye).
  pub_->command({"SET", presence_key(settings_.node_id), hello_text(), "PX",
                 std::to_string(kPresenceTtl / std::chrono::milliseconds(1))},
                [](redisReply*) {});
  std::vector<std::pair<std::int64_t, std::uint64_t>> watched;
  std::vector<std::pair<std::int64_t, std::uint64_t>> overdue;
  {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    for (const auto& e : peers_.expected()) {
      if (e.conn == 0 || !e.node) {
        continue;
      }
      // An unconfirmed peer may be reconnecting (a restarted Redis): it has until the startup
      // timeout to say hello again.
      if (!e.slot.confirmed) {
        if (now - e.slot.unconfirmed_since > settings_.startup_timeout) {
          overdue.emplace_back(*e.node, e.conn);
        }
      } else {
        watched.emplace_back(*e.node, e.conn);
      }
    }
  }
  for (auto [node, instance] : overdue) {
    leave(node, instance, "it did not come back after the Redis connection was lost");
  }
  for (auto [node, instance] : watched) {
    pub_->command({"PUBSUB", "NUMSUB", channel_of(node)}, [this, gen, node = node, instance = instance](redisReply* r) {
      if (gen != generation_ || r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        return;
      }
      if (r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer == 0) {
        leave(node, instance, "connection lost");
      }
    });
  }
  hand_over_batch();
  send_notices();  // a safety net: a notice is normally sent within kNoticeDelay
  tick_timer_.expires_after(kTick);
  tick_timer_.async_wait([this, gen](const boost::system::error_code& ec) {
    if (!ec && gen == generation_) {
      tick();
    }
  });
}

void RedisTransport::wait_ready() {
  std::unique_lock lock(mutex_);
  if (group_.wait_ready(lock, changed_, [&] { return link_ == Link::up; }, [&] { return !permanent_error_.empty(); })) {
    return;
  }
  if (!permanent_error_.empty()) {
    throw Error(permanent_error_, permanent_hint_);
  }
  if (peers_.refused()) {
    throw group_.refused_error();
  }
  if (!reached_once_) {
    throw Error("cannot reach Redis at " + server_.where() + " within " + seconds_text(settings_.startup_timeout) +
                    ": " + (last_error_.empty() ? std::string("no answer") : last_error_),
                "start redis-server there, or give the right --redis-host / --redis-port (or --redis-url)");
  }
  throw group_.not_ready_error([](const Peers::Expected&) { return std::string("no hello yet"); },
                               " over Redis at " + server_.where(),
                               "are those workers running, with the same --run-id and Redis? a slow start needs a "
                               "longer --startup-timeout");
}

std::vector<PeerInfo> RedisTransport::peers() const {
  std::lock_guard lock(mutex_);
  return peers_.peers();
}

void RedisTransport::shutdown(bool failed) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_ || !thread_.joinable()) {
      shutting_down_ = true;
      return;
    }
    shutting_down_ = true;
  }
  boost::asio::post(io_, [this, failed] { say_goodbye(failed); });
  {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, kShutdownWait, [&] { return closed_; });
    if (!outbox_.empty()) {
      counters_.lost += outbox_.size();
      DITASK_LOG(warn, "redis") << outbox_.size() << " event(s) queued for Redis at " << server_.where()
                                   << " were never published (lost)";
      outbox_.clear();
    }
  }
  work_.reset();
  io_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  {
    const std::lock_guard guard(pub_guard_);  // an emitting thread may still try to publish
    pub_.reset();
  }
  sub_.reset();
}

void RedisTransport::say_goodbye(bool failed) {
  const std::lock_guard guard(pub_guard_);
  bool up = false;
  {
    std::lock_guard lock(mutex_);
    up = link_ == Link::up;
    link_ = up ? Link::closing : Link::down;
  }
  if (!up) {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
    return;
  }
  send_notices();    // the peers hear what this node's task did with their events
  publish_outbox();  // what was emitted before the bye goes first
  std::vector<Outgoing> byes;
  {
    std::lock_guard lock(mutex_);
    for (auto& e : peers_.expected()) {
      if (e.conn != 0 && e.node) {
        Outgoing out{channel_of(*e.node), {}};
        encode_frame(out.frame, FrameKind::bye, failed, settings_.node_id, instance_, e.conn, e.slot.sent_seq, {}, {});
        byes.push_back(std::move(out));
      }
    }
  }
  for (auto& b : byes) {
    publish_now(std::move(b), false);
  }
  pub_->command({"DEL", presence_key(settings_.node_id)}, [](redisReply*) {});
  // Replies keep their order: once PING is answered, everything before it reached Redis.
  pub_->command({"PING"}, [this](redisReply*) {
    pub_->close();
    sub_->close();
  });
}

std::shared_ptr<Transport> make_redis(const NodeSettings& common, const RedisSettings& server) {
  auto transport = std::make_shared<RedisTransport>(common, server);
  transport->start();
  return transport;
}

TransportStarter redis_starter(const WorkerEnv& env) {
  auto server = redis_settings(env);
  if (!server) {
    throw Error("DITASK_PLAN: 'mq' does not name Redis", "worker mode is started by the ditask launcher");
  }
  return [server = *server](const NodeSettings& node) { return make_redis(node, server); };
}

}  // namespace ditask::detail::redis
