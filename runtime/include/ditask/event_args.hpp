// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/export.hpp"

namespace ditask {

using json = nlohmann::json;

namespace detail {

template <class T>
inline constexpr bool is_bytes_v = std::is_same_v<std::decay_t<T>, std::vector<std::uint8_t>>;
/// True for std::span<const std::uint8_t>: bytes sent as a binary without a vector of their own,
/// and received as a view of the event's bytes, valid while the handler runs.
template <class T>
inline constexpr bool is_bytes_view_v = std::is_same_v<std::decay_t<T>, std::span<const std::uint8_t>>;

/// One argument as JSON. A std::vector<std::uint8_t> or std::span<const std::uint8_t> becomes a
/// JSON binary (raw bytes on the wire).
template <class T>
json to_arg(T&& value) {
  if constexpr (is_bytes_v<T>) {
    return json::binary(std::vector<std::uint8_t>(std::forward<T>(value)));
  } else if constexpr (is_bytes_view_v<T>) {
    return json::binary(std::vector<std::uint8_t>(value.begin(), value.end()));
  } else {
    return json(std::forward<T>(value));
  }
}

/// A JSON argument as T (any type with nlohmann from_json). Errors: nlohmann::json::exception.
template <class T>
T from_arg(const json& value) {
  if constexpr (is_bytes_view_v<T>) {  // a view of `value`'s bytes; a non-binary throws type_error
    const auto& bytes = value.get_binary();
    return T(bytes.data(), bytes.size());
  } else {
    if constexpr (is_bytes_v<T>) {
      if (value.is_binary()) {
        return T(value.get_binary().begin(), value.get_binary().end());
      }
    }
    return value.get<T>();
  }
}

}  // namespace detail

/// A named (keyword) argument, made with ditask::kw().
struct Kw {
  std::string name;
  json value;
};

/// Makes a named argument: `task.emit("step", 3, ditask::kw("reward", 1.5))`, the counterpart of
/// DI-engine's `emit("step", 3, reward=1.5)`.
template <class T>
Kw kw(std::string name, T&& value) {
  return Kw{std::move(name), detail::to_arg(std::forward<T>(value))};
}

/// The named arguments of one event, as a handler sees them when its last parameter is
/// `const ditask::Kwargs&`.
class Kwargs {
 public:
  Kwargs() = default;
  /// Wraps a JSON object (name -> value).
  explicit Kwargs(json object) : object_(std::move(object)) {}
  /// True when `name` was passed.
  bool contains(const std::string& name) const { return object_.contains(name); }
  /// The argument `name` as T. Errors: ditask::Error naming the argument when absent or mistyped.
  template <class T>
  T get(const std::string& name) const;
  /// The argument `name` as T, or `fallback` when it was not passed.
  template <class T>
  T get_or(const std::string& name, T fallback) const {
    return contains(name) ? get<T>(name) : fallback;
  }
  /// Number of named arguments.
  std::size_t size() const { return object_.size(); }
  /// The underlying JSON object.
  const json& raw() const { return object_; }

 private:
  json object_ = json::object();
};

/// Everything one emit carried: positional arguments (a JSON array) and named ones (a JSON
/// object), as DI-engine's `{"a": args, "k": kwargs}`. Returned by Task::wait_for and given to
/// handlers that take `const ditask::EventArgs&`.
struct EventArgs {
  json args = json::array();
  json kwargs = json::object();

  /// Positional argument i as T. Errors: ditask::Error when i is out of range or the type differs.
  template <class T>
  T get(std::size_t i) const;
  /// Number of positional arguments.
  std::size_t size() const { return args.size(); }
  /// The named arguments.
  Kwargs named() const { return Kwargs(kwargs); }

  /// Builds EventArgs from C++ values; ditask::Kw values become named arguments.
  template <class... A>
  static EventArgs from(A&&... values) {
    EventArgs out;
    (out.add(std::forward<A>(values)), ...);
    return out;
  }

 private:
  template <class T>
  void add(T&& value) {
    if constexpr (std::is_same_v<std::decay_t<T>, Kw>) {
      kwargs[value.name] = std::forward<T>(value).value;
    } else {
      args.push_back(detail::to_arg(std::forward<T>(value)));
    }
  }
};

namespace detail {
/// Throws ditask::Error "<what>: <reason>" (out of line to keep <stdexcept> text out of templates).
[[noreturn]] DITASK_API void throw_arg_error(const std::string& what, const std::string& reason);
}  // namespace detail

template <class T>
T Kwargs::get(const std::string& name) const {
  auto it = object_.find(name);
  if (it == object_.end()) {
    detail::throw_arg_error("named argument '" + name + "'", "not passed");
  }
  try {
    return detail::from_arg<T>(*it);
  } catch (const json::exception& e) {
    detail::throw_arg_error("named argument '" + name + "'", e.what());
  }
}

template <class T>
T EventArgs::get(std::size_t i) const {
  if (i >= args.size()) {
    detail::throw_arg_error("argument " + std::to_string(i),
                            "only " + std::to_string(args.size()) + " passed");
  }
  try {
    return detail::from_arg<T>(args[i]);
  } catch (const json::exception& e) {
    detail::throw_arg_error("argument " + std::to_string(i), e.what());
  }
}

}  // namespace ditask
