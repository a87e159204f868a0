// SPDX-License-Identifier: MIT
#include "ditask/task.hpp"

#include <fnmatch.h>

#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "internal_access.hpp"
#include "rpc/rpc_engine.hpp"
#include "transport/transport.hpp"
#include "start_hook.hpp"
#include "task_impl.hpp"
#include "trace/trace.hpp"
#include "worker_stats.hpp"

namespace ditask {

namespace detail {
namespace {
std::mutex g_start_hook_mutex;
std::function<void()> g_start_hook;  // guarded by g_start_hook_mutex
}  // namespace

void set_start_hook(std::function<void()> hook) {
  std::lock_guard lock(g_start_hook_mutex);
  g_start_hook = std::move(hook);
}

void run_start_hook() {
  std::function<void()> hook;
  {
    std::lock_guard lock(g_start_hook_mutex);
    hook = g_start_hook;
  }
  if (hook) {
    hook();
  }
}
}  // namespace detail

namespace {
/// How long an orderly stop waits for the peers' own finish.
constexpr std::chrono::milliseconds kFinishWait{10'000};
}  // namespace

void throw_not_running() {
  throw Error("task is not running", "call ditask::task().start() first and keep its guard alive");
}

Running::~Running() { stop(); }

void Running::stop() noexcept {
  if (task_ != nullptr) {
    std::exchange(task_, nullptr)->stop();
  }
}

Task::Task() : impl_(std::make_unique<Impl>()) {}

Task::~Task() { stop(); }

Running Task::start(StartOptions options) {
  if (options.n_async_workers < 1) {
    throw Error("n_async_workers must be at least 1, got " + std::to_string(options.n_async_workers));
  }
  auto bus = std::make_shared<detail::EventBus>(
      [impl = impl_.get()](const std::string& event, std::exception_ptr error) {
        impl->on_handler_error(event, error);
      });
  start_locked(std::move(options), bus);
  try {
    join_transport(bus);
  } catch (...) {
    stop_as(true);
    throw;
  }
  // After `running` is set: a SIGUSR1 that came before start() becomes an event now instead of
  // being dropped as "task not running".
  detail::run_start_hook();
  return Running(this);
}

void Task::join_transport(const std::shared_ptr<detail::EventBus>& bus) {
  if (!impl_->router.is_active()) {
    return;
  }
  auto transport = detail::worker_transport(true);
  if (!transport) {
    return;
  }
  auto rpc = std::make_shared<detail::RpcEngine>(
      transport, detail::RpcEngine::Self{impl_->router.node_id(), detail::RouterAccess::local_meta(impl_->router),
                                         labels()});
  rpc->start();
  {
    std::lock_guard lock(impl_->mutex);
    impl_->transport = transport;
    impl_->rpc = rpc;
  }
  detail::set_current_rpc_engine(rpc);
  detail::RouterAccess::set_transport(impl_->router, transport);
  Impl* impl = impl_.get();
  transport->attach([bus, impl, rpc](std::vector<detail::RemoteEvent>&& events) {
    rpc->take(events);  // remote calls and their replies never reach the bus
    if (detail::trace::on()) {  // --trace: joins and leaves
      for (const auto& e : events) {
        if (e.notice) {
          detail::trace::record(detail::trace::Phase::instant, detail::trace::Category::mesh, std::string_view(e.event),
                                0, e.meta ? e.meta->sender : -1);
        }
      }
    }
    if (events.empty()) {
      return;  // a batch of calls or replies only
    }
    const auto seen = detail::FinishBarrier::scan(events);
    // A peer's orderly stop ends this node's run() loop too (DI-engine's finish broadcast).
    if (seen.finish_ok) {
      impl->finish = true;
    }
    bus->post_remote(std::move(events));
    impl->finish_barrier.note(seen);  // only now: what a peer sent before its finish is queued
  });
  // Peers learn which events this task handles once its startup window closed (over Redis, an
  // event no handler here wants never travels).
  std::weak_ptr<detail::Transport> weak = transport;
  bus->set_interest_listener([weak](const std::set<std::string>& names) {
    if (auto t = weak.lock()) {
      t->set_interest(names);
    }
  });
  transport->wait_ready();
  if (detail::trace::on()) {
    detail::trace::record(detail::trace::Phase::instant, detail::trace::Category::mesh, std::string_view("ready"));
  }
}

void Task::start_locked(StartOptions options, std::shared_ptr<detail::EventBus> bus) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->running) {
    throw Error("task is already running", "stop it (destroy the guard start() returned) first");
  }
  bus->set_local_meta(detail::RouterAccess::local_meta(impl_->router));
  bus->start();
  impl_->bus = std::move(bus);
  impl_->labels = options.labels;
  if (options.async_mode) {
    impl_->labels.insert("async");
    impl_->pool = std::make_unique<detail::WorkerPool>(options.n_async_workers);
  }
  if (impl_->router.is_active()) {
    impl_->labels.insert("distributed");
    impl_->labels.insert("node." + std::to_string(impl_->router.node_id()));
    auto extra = impl_->router.labels();
    impl_->labels.insert(extra.begin(), extra.end());
  } else {
    impl_->labels.insert("standalone");
  }
  impl_->ctx = options.ctx.value_or(Context{});
  impl_->options = std::move(options);
  impl_->finish = false;
  impl_->roles.clear();
  impl_->task_lock = Lock();
  impl_->running = true;
}

void Task::stop() noexcept { stop_as(std::uncaught_exceptions() > 0); }

void Task::stop(bool failed) noexcept { stop_as(failed); }

void Task::stop_as(bool failing) noexcept {
  std::shared_ptr<detail::Transport> transport;
  std::shared_ptr<detail::RpcEngine> rpc;
  std::shared_ptr<detail::EventBus> running_bus;
  {
    std::lock_guard lock(impl_->mutex);
    transport = impl_->running ? impl_->transport : nullptr;  // kept until below: handlers may still emit
    running_bus = impl_->running ? impl_->bus : nullptr;
    rpc = std::exchange(impl_->rpc, nullptr);
  }
  if (running_bus) {
    running_bus->set_interest_listener(nullptr);  // what the handlers do from now on concerns no peer
  }
  if (rpc) {
    // Calls in flight fail, served calls end, handles are released, owned objects destroyed.
    detail::set_current_rpc_engine(nullptr);
    rpc->stop();
    detail::add_finished_rpc_run(rpc->stats());  // the worker's totals for --summary-json
  }
  if (transport) {
    try {
      EventArgs args = EventArgs::from(true, kw("reason", failing ? "failed" : "ok"),
                                       kw("node_id", impl_->router.node_id()));
      transport->send(detail::SendTarget::all(), events::finish, args);
      // What the peers emitted before their own stop still reaches this node's handlers.
      if (!failing && !impl_->finish_barrier.wait([&] { return transport->peers(); }, kFinishWait)) {
        DITASK_LOG(info, "task") << "stopping without the finish of every peer (waited "
                                 << kFinishWait.count() / 1000 << " s)";
      }
    } catch (const std::exception& e) {
      DITASK_LOG(warn, "task") << "could not tell the peers that this node finished: " << e.what();
    }
    transport->set_interest(std::nullopt);  // a next task gets everything until its window closes
    transport->detach();
  }
  if (rpc) {
    rpc->close();  // calls that came while this node waited for the finish were answered `stopped`
  }
  std::shared_ptr<detail::EventBus> bus;
  std::unique_ptr<detail::WorkerPool> pool;
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->running) {
      return;
    }
    impl_->running = false;
    impl_->transport = nullptr;
    bus = std::move(impl_->bus);
    pool = std::move(impl_->pool);
    impl_->middleware.clear();
    impl_->wrappers.clear();
    impl_->roles.clear();
  }
  // Queued handlers still run (as DI-engine's event loop does), then waits are woken.
  bus->stop();
  pool.reset();
  {
    std::lock_guard lock(impl_->stack_mutex);
    impl_->backward_stack.clear();
    impl_->pending.clear();
  }
  if (impl_->failures->take()) {
    DITASK_LOG(warn, "task") << "task stopped with an unreported handler failure (logged above)";
  }
}

bool Task::running() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->running;
}

bool Task::async_mode() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->running && impl_->options.async_mode;
}

std::set<std::string> Task::labels() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->labels;
}

bool Task::match_labels(std::string_view pattern) const {
  return match_labels(std::vector<std::string>{std::string(pattern)});
}

bool Task::match_labels(const std::vector<std::string>& patterns) const {
  std::lock_guard lock(impl_->mutex);
  for (const auto& pattern : patterns) {
    for (const auto& label : impl_->labels) {
      if (::fnmatch(pattern.c_str(), label.c_str(), 0) == 0) {
        return true;
      }
    }
  }
  return false;
}

void Task::add_role(std::string role) {
  std::lock_guard lock(impl_->mutex);
  impl_->roles.insert(std::move(role));
}

bool Task::has_role(std::string_view role) const {
  const auto all = roles();
  return all.empty() || all.count(std::string(role)) != 0;
}

std::set<std::string> Task::roles() const {
  auto all = impl_->router.roles();  // --roles, fixed for the worker's life
  std::lock_guard lock(impl_->mutex);
  all.insert(impl_->roles.begin(), impl_->roles.end());
  return all;
}

Router& Task::router() noexcept { return impl_->router; }

Task& task() {
  static Task instance;
  return instance;
}

}  // namespace ditask
