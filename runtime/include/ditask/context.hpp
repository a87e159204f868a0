// SPDX-License-Identifier: MIT
#pragma once

#include <any>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ditask/export.hpp"

namespace ditask {

/// The per-step state that middleware shares (DI-engine's Context / OnlineRLContext).
/// `renew()` starts the next step: a fresh context with total_step + 1 that carries over only
/// the kept keys. Thread: not synchronised; async-mode forwards that touch the same key must
/// coordinate themselves (as in DI-engine).
class DITASK_API Context {
 public:
  /// Steps completed before this one; run() increments it through renew().
  std::int64_t total_step = 0;
  // The online-RL fields DI-engine's OnlineRLContext keeps across steps.
  std::int64_t env_step = 0;
  std::int64_t env_episode = 0;
  std::int64_t train_iter = 0;
  std::int64_t last_eval_iter = -1;
  double last_eval_value = 0.0;

  /// An empty context that keeps nothing.
  Context() = default;
  /// A context that keeps env_step, env_episode, train_iter, last_eval_iter and last_eval_value
  /// across renew(), as DI-engine's OnlineRLContext does.
  static Context online_rl();

  /// Marks keys (field names above or user-data keys) that survive renew(). Unknown names are
  /// allowed: they are kept once they exist.
  void keep(std::initializer_list<std::string> keys);
  /// The kept keys.
  const std::set<std::string>& kept() const noexcept { return kept_; }
  /// The next step's context: total_step + 1, kept fields and data copied, the rest reset.
  Context renew() const;

  /// Stores `value` under `key`, replacing any earlier value of any type.
  template <class T>
  void set(const std::string& key, T value) {
    data_[key] = std::move(value);
  }
  /// The value under `key`. Errors: ditask::Error when missing or of another type.
  template <class T>
  T& get(const std::string& key) {
    return *std::any_cast<T>(&find_checked(key, typeid(T)));
  }
  template <class T>
  const T& get(const std::string& key) const {
    return *std::any_cast<T>(&const_cast<Context*>(this)->find_checked(key, typeid(T)));
  }
  /// The value under `key`, or nullptr when missing or of another type.
  template <class T>
  T* find(const std::string& key) {
    auto it = data_.find(key);
    return it == data_.end() ? nullptr : std::any_cast<T>(&it->second);
  }
  /// True when user data `key` exists.
  bool has(const std::string& key) const { return data_.count(key) != 0; }
  /// Removes user data `key` (no-op when absent).
  void erase(const std::string& key) { data_.erase(key); }
  /// The user-data keys, sorted.
  std::vector<std::string> keys() const;

 private:
  std::any& find_checked(const std::string& key, const std::type_info& wanted);

  std::map<std::string, std::any> data_;
  std::set<std::string> kept_;
};

}  // namespace ditask
