// SPDX-License-Identifier: MIT
// Task: the middleware pipeline (use, run, forward/backward, serial, parallel, wrap, locks).
#include "ditask/error.hpp"
#include "ditask/task.hpp"
#include "trace/trace.hpp"
#include "task_impl.hpp"

namespace ditask {
namespace {

/// Releases a Lock when it goes out of scope.
struct LockRelease {
  const Lock& lock;
  ~LockRelease() { lock.release(); }
};

/// Runs `fn(ctx)` holding `lock` (queued as `ticket`); its backward part takes the lock again
/// when it runs.
Backward call_locked(const Middleware& fn, Context& ctx, const std::optional<Lock>& lock,
                     std::uint64_t ticket) {
  if (!lock) {
    return fn(ctx);
  }
  lock->acquire(ticket);
  LockRelease release{*lock};
  Backward back = fn(ctx);
  if (!back) {
    return back;
  }
  return [back = std::move(back), l = *lock] {
    l.acquire(l.take_ticket());
    LockRelease again{l};
    back();
  };
}

}  // namespace

detail::WorkerPool& Task::Impl::worker_pool() {
  std::lock_guard lock(mutex);
  if (!running) {
    throw_not_running();
  }
  if (!pool) {
    pool = std::make_unique<detail::WorkerPool>(options.n_async_workers);
  }
  return *pool;
}

void Task::Impl::start_forward(const Step& step) {
  auto events = live_bus();
  bool async = false;
  {
    std::lock_guard lock(mutex);
    async = options.async_mode;
  }
  // The ticket is taken here, in call order, so locked middleware run in registration order.
  const std::uint64_t ticket = step.lock ? step.lock->take_ticket() : 0;
  auto body = [this, fn = step.fn, lock = step.lock, ticket] {
    const detail::trace::Span span(detail::trace::Category::task, "middleware");  // --trace
    Backward back = call_locked(fn, ctx, lock, ticket);
    if (back) {
      std::lock_guard guard(stack_mutex);
      backward_stack.push_back(std::move(back));
    }
  };
  if (!async) {
    body();
    return;
  }
  auto handle = worker_pool().submit([body = std::move(body), events] {
    try {
      body();
    } catch (...) {
      events->set_abort(true);  // wake wait_for calls in sibling forwards so the step can end
      throw;
    }
  });
  std::lock_guard guard(stack_mutex);
  pending.push_back(std::move(handle));
}

void Task::Impl::sync_forwards() {
  std::vector<detail::WorkerPool::Handle> jobs;
  {
    std::lock_guard guard(stack_mutex);
    jobs.swap(pending);
  }
  if (jobs.empty()) {
    return;
  }
  if (auto error = worker_pool().wait(jobs)) {
    live_bus()->set_abort(false);
    std::rethrow_exception(error);
  }
}

void Task::Impl::run_backward() {
  while (true) {
    Backward back;
    {
      std::lock_guard guard(stack_mutex);
      if (backward_stack.empty()) {
        return;
      }
      back = std::move(backward_stack.back());
      backward_stack.pop_back();
    }
    back();
  }
}

void Task::add_middleware(Middleware fn, std::optional<Lock> lock) {
  std::lock_guard guard(impl_->mutex);
  if (!impl_->running) {
    throw_not_running();
  }
  for (const auto& wrapper : impl_->wrappers) {
    fn = wrapper(std::move(fn));
  }
  impl_->middleware.push_back(Impl::Step{std::move(fn), std::move(lock)});
}

void Task::use_wrapper(Wrapper wrapper) {
  std::lock_guard guard(impl_->mutex);
  if (!impl_->running) {
    throw_not_running();
  }
  for (auto& step : impl_->middleware) {
    step.fn = wrapper(std::move(step.fn));
  }
  impl_->wrappers.push_back(std::move(wrapper));
}

void Task::run(std::int64_t max_step) {
  ready();  // the startup window for remote events ends here
  for (std::int64_t i = 0; i < max_step; ++i) {
    std::vector<Impl::Step> steps;
    {
      std::lock_guard guard(impl_->mutex);
      if (!impl_->running) {
        throw_not_running();
      }
      steps = impl_->middleware;
    }
    if (steps.empty()) {
      return;
    }
    const detail::trace::Span span(detail::trace::Category::task, "step");  // --trace: one run() step
    try {
      for (const auto& step : steps) {
        impl_->start_forward(step);
      }
      impl_->sync_forwards();
      impl_->run_backward();
      impl_->sync_forwards();
    } catch (...) {
      // Leave nothing of the failed step behind, so the task can run again.
      try {
        impl_->sync_forwards();
      } catch (...) {
        // The first failure is the one reported.
      }
      std::lock_guard guard(impl_->stack_mutex);
      impl_->backward_stack.clear();
      throw;
    }
    impl_->rethrow_handler_error();
    if (i == max_step - 1) {
      impl_->finish = true;
    }
    if (impl_->finish) {
      break;
    }
    renew();
  }
}

void Task::forward_middleware(Middleware fn) { impl_->start_forward(Impl::Step{std::move(fn), {}}); }

void Task::backward() {
  impl_->sync_forwards();
  impl_->run_backward();
}

Middleware Task::serial_of(std::vector<Middleware> fns) {
  return [fns = std::move(fns)](Context& ctx) -> Backward {
    std::vector<Backward> backs;
    backs.reserve(fns.size());
    for (const auto& fn : fns) {
      backs.push_back(fn(ctx));
    }
    return [backs = std::move(backs)] {
      for (auto it = backs.rbegin(); it != backs.rend(); ++it) {
        if (*it) {
          (*it)();
        }
      }
    };
  };
}

Middleware Task::parallel_of(std::vector<Middleware> fns) {
  Impl* impl = impl_.get();
  return [impl, fns = std::move(fns)](Context& ctx) -> Backward {
    auto& pool = impl->worker_pool();
    std::vector<Backward> backs(fns.size());
    std::vector<detail::WorkerPool::Handle> jobs;
    for (std::size_t i = 0; i < fns.size(); ++i) {
      jobs.push_back(pool.submit([&backs, &fns, &ctx, i] { backs[i] = fns[i](ctx); }));
    }
    if (auto error = pool.wait(jobs)) {
      std::rethrow_exception(error);
    }
    return [impl, backs = std::move(backs)] {
      auto& backward_pool = impl->worker_pool();
      std::vector<detail::WorkerPool::Handle> back_jobs;
      for (const auto& back : backs) {
        if (back) {
          back_jobs.push_back(backward_pool.submit(back));
        }
      }
      if (auto error = backward_pool.wait(back_jobs)) {
        std::rethrow_exception(error);
      }
    };
  };
}

Middleware Task::wrap_middleware(Middleware fn, std::optional<Lock> lock) {
  return [fn = std::move(fn), lock = std::move(lock)](Context& ctx) {
    return call_locked(fn, ctx, lock, lock ? lock->take_ticket() : 0);
  };
}

Lock Task::shared_lock() const {
  std::lock_guard guard(impl_->mutex);
  return impl_->task_lock;
}

bool Task::finish() const noexcept { return impl_->finish; }

void Task::set_finish(bool value) noexcept { impl_->finish = value; }

void Task::renew() { impl_->ctx = impl_->ctx.renew(); }

Context& Task::ctx() { return impl_->ctx; }

}  // namespace ditask
