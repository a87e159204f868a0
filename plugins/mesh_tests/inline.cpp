// SPDX-License-Identifier: MIT
// Handlers registered with on_inline: they run on the thread that received the event when the
// dispatcher is idle, keep the order of the sender's events with on() handlers between them,
// may reply, and may not wait.
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

constexpr std::int64_t kInlineEvents = 400;

std::string inline_thread_text(std::thread::id id) {
  std::ostringstream out;
  out << id;
  return out.str();
}

// What node 1's handlers share with its entry. It outlives the task (declared before start()),
// so no handler runs after it is gone.
struct InlineReceiver {
  std::mutex mutex;
  std::vector<std::int64_t> seen;  // guarded by mutex
  std::string dispatcher;          // guarded by mutex: the dispatcher's thread, as on() handlers see it
  Shared<bool> done;
};

// Node 1's side: "queued" (on) and "arrived" (on_inline) record their numbers in one list;
// "check" (on) answers whether the list is 0..kInlineEvents-1; "probe" (on_inline) answers whether it
// ran off the dispatcher thread, and then what a wait in it did.
void inline_receiver(ditask::Task& task, InlineReceiver& state) {
  auto& mutex = state.mutex;
  auto& seen = state.seen;
  auto& dispatcher = state.dispatcher;
  auto& done = state.done;
  task.on("queued", [&](std::int64_t n) {
    std::lock_guard lock(mutex);
    dispatcher = inline_thread_text(std::this_thread::get_id());
    seen.push_back(n);
  });
  task.on_inline("arrived", [&](std::int64_t n) {
    std::lock_guard lock(mutex);
    seen.push_back(n);
  });
  task.on("check", [&](const ditask::EventMeta& meta) {
    std::lock_guard lock(mutex);
    bool in_order = static_cast<std::int64_t>(seen.size()) == kInlineEvents;
    for (std::size_t i = 0; in_order && i < seen.size(); ++i) {
      in_order = seen[i] == static_cast<std::int64_t>(i);
    }
    task.emit_to_node(meta.sender, "checked", in_order);
  });
  task.on_inline("probe", [&](const ditask::EventMeta& meta) {
    std::string here = inline_thread_text(std::this_thread::get_id());
    {
      std::lock_guard lock(mutex);
      if (here == dispatcher) {
        task.emit_to_node(meta.sender, "probed", false, std::string{});
        return;
      }
    }
    std::string waited = "waited";
    try {
      task.wait_for("never", std::chrono::milliseconds(1));
    } catch (const ditask::Error& e) {
      waited = std::string(e.what()) + "|" + e.hint();
    }
    task.emit_to_node(meta.sender, "probed", true, waited);
  });
  task.on("bye", [&] { done.update([](bool& d) { d = true; }); });
  task.ready();
  say("READY", "node 1");
  task.emit_to_node(0, "listening");
  done.wait([](bool d) { return d; }, "node 0's bye");
}

}  // namespace

// 2 workers. Node 0 sends node 1 kInlineEvents numbered events in runs of on() and on_inline
// handlers, then asks whether they ran in order; then probes until an on_inline handler ran
// off node 1's dispatcher thread (it does whenever the dispatcher is idle as the probe comes).
// Prints "RESULT in_order=1 inline_ran=1 wait=<the refusal's text>|<its hint>" on node 0.
DITASK_MAIN(on_inline) {
  auto& task = ditask::task();
  InlineReceiver state;
  auto running = task.start();
  if (node_id() == 1) {
    inline_receiver(task, state);
    return;
  }
  auto listening = task.waiter("listening");
  task.ready();
  if (!listening.wait(std::chrono::seconds(60))) {
    throw std::runtime_error("node 1 never listened");
  }
  for (std::int64_t n = 0; n < kInlineEvents; ++n) {
    task.emit_to_node(1, (n / 7) % 2 == 0 ? "queued" : "arrived", n);  // runs of 7 each
  }
  auto checked = task.waiter("checked");
  task.emit_to_node(1, "check");
  const auto in_order = checked.wait(std::chrono::seconds(60));
  if (!in_order) {
    throw std::runtime_error("node 1 never checked");
  }
  std::string waited;
  bool ran_inline = false;
  for (int attempt = 0; attempt < 1000 && !ran_inline; ++attempt) {
    auto probed = task.waiter("probed");
    task.emit_to_node(1, "probe");
    const auto answer = probed.wait(std::chrono::seconds(60));
    if (!answer) {
      throw std::runtime_error("node 1 never answered a probe");
    }
    ran_inline = answer->get<bool>(0);
    waited = answer->get<std::string>(1);
  }
  task.emit_to_node(1, "bye");
  result("in_order=" + std::to_string(int{in_order->get<bool>(0)}) + " inline_ran=" + std::to_string(int{ran_inline}) +
         " wait=" + waited);
}
