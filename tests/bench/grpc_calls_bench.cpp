// SPDX-License-Identifier: MIT
// gRPC beside ditask in `scripts/bench.sh rpc`: the C++ RPC a user would otherwise pick (Debian's
// gRPC 1.51, its callback API, insecure loopback TCP), with the discipline of plugins/bench_rpc:
// K unary calls of S bytes in flight between two processes, the server answering each with its
// argument. A call's latency runs from starting it to its completion callback; a new call starts
// as each one completes (any of them: gRPC's callbacks come in no fixed order).
//
//   ditask_grpc_calls_bench calls [--inflight 64] [--rounds 200000] [--warmup 20000] [--size 64]
//
// Prints `grpc_calls_bench calls inflight=K size=S rounds=N p50_us=.. p99_us=.. calls_per_s=..`.
// Exit: 0, 1 when a call or the server failed, 2 on a usage error.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_measure.hpp"
#include "calls_options.hpp"
#include "grpc_echo.grpc.pb.h"

namespace {

using ditask::bench::now_ns;
using ditask::bench::UsageError;

// The server's one method: the answer is the argument.
class EchoService final : public ditask_bench::Echo::CallbackService {
  grpc::ServerUnaryReactor* Call(grpc::CallbackServerContext* context, const ditask_bench::Blob* request,
                                 ditask_bench::Blob* reply) override {
    reply->set_data(request->data());
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// The child: serves on a free loopback port, writes the port to `report`, and runs until killed.
[[noreturn]] void serve(int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(4 << 20);
  builder.SetMaxSendMessageSize(4 << 20);
  builder.RegisterService(&service);
  const auto server = builder.BuildAndStart();
  const bool told = server && port > 0 && ::write(report, &port, sizeof port) == static_cast<ssize_t>(sizeof port);
  ::close(report);
  if (!told) {
    std::fprintf(stderr, "grpc_calls_bench: error: the server did not start\n");
    _exit(1);
  }
  server->Wait();  // until the parent kills it
  _exit(0);
}

// K calls in flight until `total` are answered; the last `total - warmup` are measured.
class Caller {
 public:
  Caller(ditask_bench::Echo::Stub& stub, std::int64_t inflight, std::int64_t warmup, std::int64_t total, std::size_t size)
      : stub_(stub), warmup_(warmup), total_(total), slots_(static_cast<std::size_t>(inflight)) {
    request_.set_data(std::string(size, 'x'));
    latencies_.reserve(static_cast<std::size_t>(total - warmup));
  }

  // Runs every call; returns the measured window's nanoseconds. Errors: std::runtime_error for
  // a failed call.
  std::int64_t run() {
    for (auto& slot : slots_) {
      start(slot);
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return answered_ == total_ || !error_.empty(); });
    if (!error_.empty()) {
      throw std::runtime_error(error_);
    }
    return last_ - first_;
  }
  std::vector<std::int64_t>& latencies() { return latencies_; }

 private:
  struct Slot {
    std::unique_ptr<grpc::ClientContext> context;
    ditask_bench::Blob reply;
    std::int64_t started = 0;
  };

  void start(Slot& slot) {
    {
      std::lock_guard lock(mutex_);
      if (issued_ == total_ || !error_.empty()) {
        return;
      }
      ++issued_;
    }
    slot.context = std::make_unique<grpc::ClientContext>();
    // A connection attempt that fails at once (seen once on a loaded machine: "failed to connect
    // to all addresses") is retried instead of failing the call: gRPC fails fast by default.
    slot.context->set_wait_for_ready(true);
    slot.started = now_ns();
    stub_.async()->Call(slot.context.get(), &request_, &slot.reply,
                        [this, &slot](const grpc::Status& status) { finished(slot, status); });
  }

  void finished(Slot& slot, const grpc::Status& status) {
    const std::int64_t now = now_ns();
    {
      std::lock_guard lock(mutex_);
      if (!status.ok()) {
        error_ = "a call failed: " + status.error_message();
      } else {
        if (answered_ == warmup_) {
          first_ = slot.started;  // the measured window starts with the first measured call
        }
        if (answered_ >= warmup_) {
          latencies_.push_back(now - slot.started);
        }
        ++answered_;
        last_ = now;
      }
      if (answered_ == total_ || !error_.empty()) {
        done_.notify_all();
        return;
      }
    }
    start(slot);
  }

  ditask_bench::Echo::Stub& stub_;
  const std::int64_t warmup_;
  const std::int64_t total_;
  ditask_bench::Blob request_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::int64_t issued_ = 0;    // guarded by mutex_
  std::int64_t answered_ = 0;  // guarded by mutex_
  std::int64_t first_ = 0;     // guarded by mutex_
  std::int64_t last_ = 0;      // guarded by mutex_
  std::string error_;          // guarded by mutex_
  std::vector<std::int64_t> latencies_;  // guarded by mutex_
};

void calls(const std::map<std::string, std::int64_t>& options) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();  // before gRPC starts any thread in this process
  if (child < 0) {
    throw std::runtime_error("fork failed");
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    serve(pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  int port = 0;
  const bool got = ::read(pipe_fds[0], &port, sizeof port) == static_cast<ssize_t>(sizeof port);
  ::close(pipe_fds[0]);
  struct Child {
    pid_t pid;
  };
  if (!got) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    throw std::runtime_error("the server did not start");
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(4 << 20);
  arguments.SetMaxSendMessageSize(4 << 20);
  const auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                 grpc::InsecureChannelCredentials(), arguments);
  const auto stub = ditask_bench::Echo::NewStub(channel);
  const auto inflight = options.at("inflight");
  const auto size = options.at("size");
  std::int64_t elapsed = 0;
  std::vector<std::int64_t> latencies;
  try {
    Caller caller(*stub, inflight, options.at("warmup"), options.at("warmup") + options.at("rounds"),
                  static_cast<std::size_t>(size));
    elapsed = caller.run();
    latencies = std::move(caller.latencies());
  } catch (...) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    throw;
  }
  ::kill(child, SIGKILL);  // the server runs until killed; its exit status says nothing
  ::waitpid(child, nullptr, 0);
  ditask::bench::print_calls("grpc_calls_bench", inflight, size, latencies, elapsed);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    calls(ditask::bench::parse_calls_options(argc, argv));
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr,
                 "grpc_calls_bench: error: %s\n"
                 "usage: ditask_grpc_calls_bench calls [--inflight K] [--rounds N] [--warmup N] [--size BYTES]\n",
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpc_calls_bench: error: %s\n", e.what());
    return 1;
  }
}
