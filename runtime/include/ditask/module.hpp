// SPDX-License-Identifier: MIT
#pragma once

/// The module side of ditask: entry functions (DITASK_MAIN) and the module's arguments.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ditask/export.hpp"

/// The entry ABI this header produces; worker mode refuses a module built for another one.
/// Bump it when the calling convention of an entry changes (signature, what the runtime sets
/// up before calling it), or when code the headers inline into a module changes its layout or
/// its wire form: the handler wrappers (handler.hpp: detail::Handlers, EventMeta) and the codec
/// (msgpack.hpp, packed_args.hpp, whose inline namespace wire_v1 is renamed with its format).
/// 3: handlers receive an EventMeta. 4: EventMeta::sender is std::int64_t, as every node id.
/// 5: a served function's reply announces its encoding (detail::begin_reply()).
#define DITASK_ABI_VERSION 5

namespace ditask {

/// The arguments after `--` on the launcher's command line (empty outside a worker).
/// Thread: any; fixed before the entry runs.
DITASK_API const std::vector<std::string>& args();

/// A module's `key=value` arguments (`ditask --package cartpole ... -- seed=3 lr=0.01`), read
/// once and checked: every argument has the form key=value, every key is one the module knows.
/// Thread: one owner. Errors of the constructors and getters: ditask::Error naming the argument,
/// with a hint (the keys it knows, or the closest one to a misspelt key).
class DITASK_API ModuleArgs {
 public:
  /// Reads args() of this worker; `known`: the keys the module takes (empty: any key).
  explicit ModuleArgs(std::set<std::string> known = {});
  /// Reads `arguments` instead of args().
  ModuleArgs(const std::vector<std::string>& arguments, std::set<std::string> known);
  /// Whether `key` was given.
  bool has(const std::string& key) const;
  /// The value of `key` as a number (strtod's forms), or `fallback` when absent.
  double number(const std::string& key, double fallback) const;
  /// The value of `key` as a base-10 integer, or `fallback` when absent.
  std::int64_t integer(const std::string& key, std::int64_t fallback) const;
  /// The value of `key` as given, or `fallback` when absent.
  std::string text(const std::string& key, const std::string& fallback) const;
  /// For a module whose arguments are all integers (a benchmark's sizes): reads args() taking
  /// the keys of `defaults` as the known ones, and returns `defaults` with the values given.
  static std::map<std::string, std::int64_t> integers(std::map<std::string, std::int64_t> defaults);

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace ditask

// Modules are built with hidden visibility; the entry symbols must stay visible to dlsym.
#define DITASK_DETAIL_ENTRY_EXPORT extern "C" __attribute__((visibility("default"), used))

/// `DITASK_MAIN(name) { ... }` defines an entry selected by `--main name`. Returning is success;
/// an escaping exception fails the worker and its what() reaches the run summary. A module may
/// define several entries (even in one file); `DITASK_MAIN(main)` is fine. Exports the C symbols
/// `ditask_entry_<name>` (calls the body) and `ditask_entry_abi_<name>` (DITASK_ABI_VERSION).
#define DITASK_MAIN(name)                                                         \
  static void ditask_body_##name();                                               \
  DITASK_DETAIL_ENTRY_EXPORT void ditask_entry_##name() { ditask_body_##name(); } \
  DITASK_DETAIL_ENTRY_EXPORT std::uint32_t ditask_entry_abi_##name() {            \
    return DITASK_ABI_VERSION;                                                    \
  }                                                                               \
  static void ditask_body_##name()
