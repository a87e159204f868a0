// SPDX-License-Identifier: MIT
#include "inline_write.hpp"

#include <vector>

#include "ditask/error.hpp"

namespace ditask::detail {

namespace {
thread_local bool granted = false;
thread_local bool holding = false;
// The connections held; a vector of few (a served batch answers one caller).
thread_local std::vector<std::shared_ptr<HeldWrite>> held;
thread_local std::vector<std::shared_ptr<HeldWrite>> releasing;  // held's spare, kept for its capacity
thread_local const std::string* on_arrival = nullptr;  // the function or event an OnArrivalScope names
thread_local bool on_arrival_handler = false;            // it names an event of on_inline handlers
}  // namespace

void grant_inline_write() noexcept { granted = true; }

bool take_inline_write() noexcept {
  const bool was = granted;
  granted = false;
  return was;
}

void hold_writes() noexcept { holding = true; }

bool holding_writes() noexcept { return holding; }

void add_held_write(const std::shared_ptr<HeldWrite>& link) {
  for (const auto& h : held) {
    if (h == link) {
      return;
    }
  }
  held.push_back(link);
}

void release_held_writes() noexcept {
  holding = false;
  if (held.empty()) {
    return;
  }
  releasing.swap(held);
  for (auto& link : releasing) {
    link->write_held();
  }
  releasing.clear();
}

OnArrivalScope::OnArrivalScope(const std::string& name, bool handler) noexcept {
  on_arrival = &name;
  on_arrival_handler = handler;
}

OnArrivalScope::~OnArrivalScope() { on_arrival = nullptr; }

bool running_on_arrival() noexcept { return on_arrival != nullptr; }

void before_wait(std::string_view what, std::string_view name) {
  if (on_arrival != nullptr) {
    const std::string waited = std::string(what) + (name.empty() ? "" : " '" + std::string(name) + "'");
    const std::string who = on_arrival_handler
                                ? "a handler of event '" + *on_arrival + "' (registered with on_inline)"
                                : "function '" + *on_arrival + "' (defined with define_inline)";
    throw Error(who + " cannot wait for " + waited +
                    ": it runs on the thread that receives this node's events and calls",
                on_arrival_handler ? "register it with on() instead, which may wait"
                                   : "define it with define() or define_concurrent() instead, which may wait");
  }
  release_held_writes();
}

}  // namespace ditask::detail
