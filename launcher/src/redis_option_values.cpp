// SPDX-License-Identifier: MIT
// --redis-url and --redis-host/--redis-port/--redis-db/--redis-password: where the workers'
// Redis is (--mq-type redis) and how they log in. docs/redis.md.
#include <charconv>

#include "ditask/error.hpp"
#include "option_values.hpp"

namespace ditask::launcher::detail {

namespace {

constexpr const char* kUrlForm = "the form is redis://[[user]:password@]host[:port][/db]";

int number_in(const std::string& what, std::string_view text, int lo, int hi, const std::string& hint) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    throw Error(what + " '" + std::string(text) + "' is not a number from " + std::to_string(lo) + " to " +
                    std::to_string(hi),
                hint);
  }
  return value;
}

}  // namespace

RedisServer parse_redis_url(const std::string& url) {
  constexpr std::string_view scheme = "redis://";
  if (!url.starts_with(scheme)) {
    throw Error("--redis-url must start with redis:// (rediss:// and unix sockets are not supported)", kUrlForm);
  }
  RedisServer r;
  std::string_view rest = std::string_view(url).substr(scheme.size());
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view login = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (const auto colon = login.find(':'); colon != std::string_view::npos) {
      r.user = std::string(login.substr(0, colon));
      r.password = std::string(login.substr(colon + 1));
    } else {
      r.password = std::string(login);  // redis://secret@host, as redis-cli -u reads it
    }
  }
  std::string_view where = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    where = rest.substr(0, slash);
    const auto db = rest.substr(slash + 1);
    if (!db.empty()) {
      r.db = number_in("--redis-url database", db, 0, 1 << 20, kUrlForm);
    }
  }
  std::string_view host = where;
  if (!where.empty() && where.front() == '[') {  // [::1]:6379
    const auto close = where.find(']');
    if (close == std::string_view::npos) {
      throw Error("--redis-url has an unclosed '[' in its host", kUrlForm);
    }
    host = where.substr(1, close - 1);
    const auto tail = where.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':') {
        throw Error("--redis-url has text after its host's ']'", kUrlForm);
      }
      r.port = number_in("--redis-url port", tail.substr(1), 1, 65535, kUrlForm);
    }
  } else if (const auto colon = where.rfind(':'); colon != std::string_view::npos) {
    host = where.substr(0, colon);
    r.port = number_in("--redis-url port", where.substr(colon + 1), 1, 65535, kUrlForm);
  }
  if (host.empty()) {
    throw Error("--redis-url names no host", kUrlForm);
  }
  r.host = std::string(host);
  return r;
}

void apply_redis_values(const RawValues& values, Options& o) {
  auto get = [&](const std::string& name) -> const std::string* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  if (const auto* url = get("redis-url")) {
    for (const char* other : {"redis-host", "redis-port", "redis-db"}) {
      if (get(other) != nullptr) {
        throw Error(std::string("--redis-url and --") + other + " both say where Redis is",
                    "give the whole address in --redis-url, or use --redis-host/--redis-port/--redis-db");
      }
    }
    o.redis = parse_redis_url(*url);
    if (o.redis.password.empty() && get("redis-password") != nullptr) {
      o.redis.password = *get("redis-password");  // --redis-password (or $DITASK_REDIS_PASSWORD)
    }
    return;
  }
  if (const auto* v = get("redis-host")) {
    if (v->empty()) {
      throw Error("--redis-host must not be empty", "give the host Redis runs on, e.g. 127.0.0.1");
    }
    o.redis.host = *v;
  }
  if (const auto* v = get("redis-port")) {
    o.redis.port = number_in("--redis-port", *v, 1, 65535, "the port redis-server listens on (default 6379)");
  }
  if (const auto* v = get("redis-db")) {
    o.redis.db = number_in("--redis-db", *v, 0, 1 << 20, "a database index of the server (0 to databases-1)");
  }
  if (const auto* v = get("redis-password")) {
    o.redis.password = *v;
  }
}

}  // namespace ditask::launcher::detail
