// SPDX-License-Identifier: MIT
// The functions and classes this process defined for remote calls (Rpc::define, define_class).
// Process-wide: definitions outlive a task's start and stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <utility>
#include <vector>

#include "ditask/handler.hpp"

namespace ditask::detail {

/// One callable: a function, a constructor ("new <Class>") or a method.
struct RpcEntry {
  RpcEntry(std::string name_, Handlers handlers_, bool concurrent_, bool on_arrival_ = false)
      : name(std::move(name_)), handlers(std::move(handlers_)), concurrent(concurrent_), on_arrival(on_arrival_) {}
  std::string name;
  Handlers handlers;
  bool concurrent = false;
  bool on_arrival = false;  ///< Rpc::define_inline: runs on the receiving thread when its caller's queue is idle
  /// How long its last run took, in nanoseconds (saturated); unknown before the first. Thread: any.
  mutable std::atomic<std::uint32_t> last_run_ns{kNeverRan};
  static constexpr std::uint32_t kNeverRan = UINT32_MAX;
};

/// A defined class: its methods by name.
struct RpcClass {
  std::string name;
  std::map<std::string, std::shared_ptr<const RpcEntry>, std::less<>> methods;
};

/// Everything defined, by name. Thread: any (a shared mutex; lookups copy a shared_ptr).
class RpcRegistry {
 public:
  /// Defines (or replaces) function `name` (`on_arrival`: Rpc::define_inline).
  void define(std::string name, Handlers handlers, bool concurrent, bool on_arrival = false);
  /// Removes function `name`; false when absent.
  bool undefine(std::string_view name);
  /// Function `name`, or null.
  std::shared_ptr<const RpcEntry> function(std::string_view name) const;
  /// Defines class `name` for `type` (again: the same class, kept).
  void define_class(std::type_index type, const std::string& name);
  /// Defines class `name` with no C++ type (a language binding's class); again: its methods
  /// are dropped, for the new definition's. Errors: ditask::Error when a C++ type has the name.
  void define_named_class(const std::string& name);
  /// True when class `name` is defined.
  bool has_class(std::string_view name) const;
  /// Adds (or replaces) a method of class `class_name` (defined first).
  void define_method(const std::string& class_name, std::string method, Handlers handlers, bool concurrent);
  /// Method `method` of class `class_name`, or null.
  std::shared_ptr<const RpcEntry> method(std::string_view class_name, std::string_view method) const;
  /// The name `type` was defined with, or null (stable: classes are never removed).
  const std::string* class_name(std::type_index type) const;
  /// "did you mean" text for an unknown function (or method of `class_name` when non-empty);
  /// empty when nothing is close.
  std::string suggest(std::string_view class_name, std::string_view name) const;

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const RpcEntry>, std::less<>> functions_;  // guarded
  std::map<std::string, RpcClass, std::less<>> classes_;                           // guarded
  std::map<std::type_index, const std::string*> class_names_;                       // guarded
};

/// The process's registry.
RpcRegistry& rpc_registry();

}  // namespace ditask::detail
