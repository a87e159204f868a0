// SPDX-License-Identifier: MIT
// Plain hiredis baselines of `scripts/bench.sh redis`, measured as the bench_mesh module measures
// ditask over --mq-type redis (bench_measure.hpp's clock):
//   rtt:    64-byte ping-pong through Redis pub/sub: PUBLISH on one connection, an echo thread
//           subscribed to it PUBLISHes back, the first thread reads the echo on its subscription.
//   stream: K one-way 64-byte messages to one subscriber, either one blocking PUBLISH per message
//           (what DI-engine's Redis MQ does) or pipelined PUBLISHes (1000 per batch).
// `ditask_redis_baseline_bench rtt --port P [--rounds N] [--warmup W] [--size S]`
// `ditask_redis_baseline_bench stream --port P [--count K] [--size S] [--pipelined]`
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_measure.hpp"

namespace {

using ditask::bench::micros;
using ditask::bench::now_ns;

struct Args {
  std::string mode;
  int port = 6379;
  long rounds = 20000, warmup = 2000, count = 1000000, size = 64;
  bool pipelined = false;
};

constexpr const char* kUsage =
    "usage: ditask_redis_baseline_bench rtt|stream [--port P] [--rounds N] [--warmup N] [--count N] [--size BYTES] "
    "[--pipelined]";

// What parse() throws: a bad command line (exit code 2, with the usage line).
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

Args parse(int argc, char** argv) {
  if (argc < 2) {
    throw UsageError("a subcommand (rtt or stream) is needed");
  }
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) {
        throw UsageError(k + " needs a value");
      }
      char* end = nullptr;
      const char* text = argv[++i];
      const long v = std::strtol(text, &end, 10);
      if (*text == '\0' || *end != '\0' || v < 0) {
        throw UsageError(k + " needs a non-negative integer, not '" + text + "'");
      }
      return v;
    };
    if (k == "--port") {
      a.port = static_cast<int>(value());
    } else if (k == "--rounds") {
      a.rounds = value();
    } else if (k == "--warmup") {
      a.warmup = value();
    } else if (k == "--count") {
      a.count = value();
    } else if (k == "--size") {
      a.size = value();
    } else if (k == "--pipelined") {
      a.pipelined = true;
    } else {
      throw UsageError("unknown option '" + k + "'");
    }
  }
  if (a.mode != "rtt" && a.mode != "stream") {
    throw UsageError("unknown subcommand '" + a.mode + "'");
  }
  if (a.rounds < 1 || a.count < 1) {
    throw UsageError("--rounds and --count need at least 1");
  }
  return a;
}

redisContext* connect(int port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err != 0) {
    throw std::runtime_error(std::string("cannot connect to Redis: ") + (c != nullptr ? c->errstr : "out of memory"));
  }
  return c;
}

void command(redisContext* c, const char* format, const char* a, std::size_t alen, const char* b, std::size_t blen) {
  auto* reply = static_cast<redisReply*>(redisCommand(c, format, a, alen, b, blen));
  if (reply == nullptr || reply->type == REDIS_REPLY_ERROR) {
    throw std::runtime_error("redis command failed");
  }
  freeReplyObject(reply);
}

// SUBSCRIBE `channel` on `c` and read the confirmation: once it is here, Redis delivers whatever
// is published to `channel` afterwards, so the publisher needs no other wait.
void subscribe(redisContext* c, const char* channel) {
  auto* reply = static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE %s", channel));
  if (reply == nullptr) {
    throw std::runtime_error("SUBSCRIBE failed");
  }
  freeReplyObject(reply);
}

// Blocks for the next message on a subscribed connection; its payload length.
std::size_t next_message(redisContext* c) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
    throw std::runtime_error("the subscription ended");
  }
  auto* reply = static_cast<redisReply*>(raw);
  const std::size_t n = reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 ? reply->element[2]->len : 0;
  freeReplyObject(reply);
  return n;
}

// A helper thread whose exception join() rethrows, and whose destructor joins: a failure on it is
// reported like one on the main thread, not by std::terminate.
class Beside {
 public:
  explicit Beside(std::function<void()> body)
      : thread_([this, body = std::move(body)] {
          try {
            body();
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;
  ~Beside() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  void join() {
    thread_.join();
    if (error_) {
      std::rethrow_exception(error_);
    }
  }

 private:
  std::exception_ptr error_;  // before thread_: set by it
  std::thread thread_;
};

int rtt(const Args& a) {
  const std::string blob(static_cast<std::size_t>(a.size), 'x');
  // Every connection is made and subscribed before the thread runs: a refused one is an error
  // line, and no ping is published before the echo side listens.
  redisContext* echo_sub = connect(a.port);
  redisContext* echo_pub = connect(a.port);
  redisContext* sub = connect(a.port);
  redisContext* pub = connect(a.port);
  subscribe(echo_sub, "bl.ping");
  subscribe(sub, "bl.pong");
  Beside echo([&] {
    for (long i = 0; i < a.rounds + a.warmup; ++i) {
      next_message(echo_sub);
      command(echo_pub, "PUBLISH %b %b", "bl.pong", 7, blob.data(), blob.size());
    }
    redisFree(echo_sub);
    redisFree(echo_pub);
  });
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(a.rounds));
  for (long i = 0; i < a.rounds + a.warmup; ++i) {
    const auto t0 = now_ns();
    command(pub, "PUBLISH %b %b", "bl.ping", 7, blob.data(), blob.size());
    next_message(sub);
    if (i >= a.warmup) {
      ns.push_back(now_ns() - t0);
    }
  }
  echo.join();
  std::sort(ns.begin(), ns.end());
  const auto n = ns.size();
  std::printf("redis_baseline rtt rounds=%zu p50_us=%s p99_us=%s\n", n, micros(ns[n / 2]).c_str(),
              micros(ns[n * 99 / 100]).c_str());
  redisFree(sub);
  redisFree(pub);
  return 0;
}

int stream(const Args& a) {
  const std::string blob(static_cast<std::size_t>(a.size), 'x');
  std::atomic<std::int64_t> last_ns{0};
  // Both connections are made, and the reader's subscribed, before the thread runs: a refused one
  // is an error line, and nothing is published before the reader listens.
  redisContext* reader_sub = connect(a.port);
  redisContext* pub = connect(a.port);
  subscribe(reader_sub, "bl.data");
  Beside reader([&] {
    for (long i = 0; i < a.count; ++i) {
      next_message(reader_sub);
    }
    last_ns = now_ns();
    redisFree(reader_sub);
  });
  const auto start = now_ns();
  if (a.pipelined) {
    constexpr long kBatch = 1000;
    for (long done = 0; done < a.count;) {
      const long n = std::min(kBatch, a.count - done);
      for (long i = 0; i < n; ++i) {
        redisAppendCommand(pub, "PUBLISH %b %b", "bl.data", static_cast<std::size_t>(7), blob.data(), blob.size());
      }
      for (long i = 0; i < n; ++i) {
        void* reply = nullptr;
        if (redisGetReply(pub, &reply) != REDIS_OK) {
          throw std::runtime_error("PUBLISH failed");
        }
        freeReplyObject(reply);
      }
      done += n;
    }
  } else {
    for (long i = 0; i < a.count; ++i) {
      command(pub, "PUBLISH %b %b", "bl.data", 7, blob.data(), blob.size());
    }
  }
  reader.join();
  const double seconds = static_cast<double>(last_ns.load() - start) / 1e9;
  std::printf("redis_baseline stream mode=%s count=%ld size=%ld seconds=%.4f events_per_s=%.0f\n",
              a.pipelined ? "pipelined" : "blocking", a.count, a.size, seconds, static_cast<double>(a.count) / seconds);
  redisFree(pub);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    return a.mode == "rtt" ? rtt(a) : stream(a);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ditask_redis_baseline_bench: error: %s\n%s\n", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ditask_redis_baseline_bench: error: %s\n", e.what());
    return 1;
  }
}
