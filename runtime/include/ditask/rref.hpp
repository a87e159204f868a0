// SPDX-License-Identifier: MIT
#pragma once

/// Handles to remote objects (ditask::RRef, PyTorch's RRef). Their calls are defined in
/// ditask/rpc.hpp, which includes this header. docs/rpc.md "Remote objects".

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/rpc_future.hpp"

namespace ditask {

namespace detail {

class ObjectTable;

/// This node's hold on one remote object (or on one of its own): shared by every RRef copy in
/// the process; when the last copy goes, the owner is told (the reference is released).
/// Thread: any.
class DITASK_API RefRecord {
 public:
  RefRecord(std::int64_t owner, std::uint64_t id, std::string class_name, std::shared_ptr<void> local,
            std::weak_ptr<ObjectTable> table) noexcept;
  ~RefRecord();
  RefRecord(const RefRecord&) = delete;
  RefRecord& operator=(const RefRecord&) = delete;
  /// The node that holds the object.
  std::int64_t owner() const noexcept { return owner_; }
  /// The object's id on its owner.
  std::uint64_t id() const noexcept { return id_; }
  /// The name its class was defined with (Rpc::define_class).
  const std::string& class_name() const noexcept { return class_name_; }
  /// The object itself on its owner; null elsewhere.
  const std::shared_ptr<void>& local() const noexcept { return local_; }

 private:
  std::int64_t owner_;
  std::uint64_t id_;
  std::string class_name_;
  std::shared_ptr<void> local_;
  std::weak_ptr<ObjectTable> table_;  // where its drop is told (gone once the task stopped)
};

/// A handle as it travels in a call's arguments or result: registers the receiver with the
/// owner (docs/rpc.md "Lifetime"). Errors: ditask::Error outside a call's arguments or result.
DITASK_API json rref_to_json(const std::shared_ptr<RefRecord>& record);
/// The receiving side: this node's record of the handle. `expected_class` is checked when set.
/// Errors: ditask::Error for a malformed handle or one of another class.
DITASK_API std::shared_ptr<RefRecord> rref_from_json(const json& value, const std::string* expected_class);
/// The name `type` was defined with on this node, or null.
DITASK_API const std::string* defined_class_name(const std::type_info& type) noexcept;
/// The name `type` was defined with. Errors: ditask::Error when it was not defined.
DITASK_API const std::string& class_name_of(const std::type_info& type);
/// Makes `object` (of a defined class) callable by others and returns this node's record.
/// Errors: ditask::Error when the task is not running in a worker, or the class is undefined.
DITASK_API std::shared_ptr<RefRecord> adopt_object(std::shared_ptr<void> object, const std::type_info& type);
/// adopt_object for a class defined by name only (define_named_class). Errors: as adopt_object.
DITASK_API std::shared_ptr<RefRecord> adopt_named_object(std::shared_ptr<void> object, const std::string& class_name);

}  // namespace detail

/// A handle to an object of class T that lives on one node (its owner): made by Rpc::remote
/// (created there) or Rpc::local_ref (one of this node's own). Calls go to the owner; the object
/// lives while any handle to it exists anywhere, or until its owner exits. Copyable; a handle
/// passed in a call's arguments or result works on the receiving node. Thread: any.
template <class T>
class RRef {
 public:
  RRef() = default;
  /// Wraps a record (made by the runtime).
  explicit RRef(std::shared_ptr<detail::RefRecord> record) : record_(std::move(record)) {}

  /// True unless default-constructed.
  explicit operator bool() const noexcept { return record_ != nullptr; }
  /// The node that holds the object.
  std::int64_t owner() const noexcept { return record_->owner(); }
  /// True on the owner.
  bool is_owner() const noexcept { return record_->local() != nullptr; }
  /// The object itself, on its owner only (null elsewhere: use to_here() for a copy).
  std::shared_ptr<T> local_value() const noexcept { return std::static_pointer_cast<T>(record_->local()); }
  /// Calls method `method` on the owner and waits (rpc_sync). Errors: RpcError.
  template <class R = void, class... A>
  R call(std::string_view method, A&&... args) const;
  /// Calls method `method` on the owner (rpc_async).
  template <class R = void, class... A>
  Future<R> call_async(std::string_view method, A&&... args) const;
  /// A copy of the object (T must convert to and from JSON). Errors: RpcError.
  T to_here() const;
  /// The record (for the runtime).
  const std::shared_ptr<detail::RefRecord>& record() const noexcept { return record_; }

 private:
  std::shared_ptr<detail::RefRecord> record_;
};

/// A handle as a call argument or result (nlohmann's to_json, found by ADL).
template <class T>
void to_json(json& out, const RRef<T>& ref) {
  out = detail::rref_to_json(ref.record());
}
/// The receiving side of to_json.
template <class T>
void from_json(const json& in, RRef<T>& ref) {
  ref = RRef<T>(detail::rref_from_json(in, detail::defined_class_name(typeid(T))));
}

}  // namespace ditask
