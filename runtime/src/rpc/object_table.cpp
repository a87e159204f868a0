// SPDX-License-Identifier: MIT
#include "object_table.hpp"

#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"

namespace ditask::detail {

using rpc_wire::RefOp;

namespace {

/// A registration to_json() made on this thread, until what carries it was sent.
struct Registration {
  std::weak_ptr<ObjectTable> table;
  std::uint64_t id = 0;
  std::int64_t dest = 0;
  std::uint64_t token = 0;  // 0: an owned object's holder count
};
thread_local std::vector<Registration> t_registrations;

}  // namespace

void ObjectTable::forget_registrations() noexcept { t_registrations.clear(); }

void ObjectTable::cancel_registrations() noexcept {
  std::vector<Registration> made;
  made.swap(t_registrations);
  for (const auto& r : made) {
    if (auto table = r.table.lock()) {
      table->cancel(r.id, r.dest, r.token);
    }
  }
}

void ObjectTable::cancel(std::uint64_t id, std::int64_t dest, std::uint64_t token) noexcept {
  std::shared_ptr<void> dead;
  std::shared_ptr<RefRecord> let_go;
  {
    std::lock_guard lock(mutex_);
    if (token != 0) {
      let_go = take_fork_locked(token);
    } else {
      dead = release_locked(id, dest, 1);
    }
  }
  // `dead` and `let_go` go here, outside the lock (a destructor may call back into the table).
}

std::shared_ptr<void> ObjectTable::release_locked(std::uint64_t id, std::int64_t holder, std::int64_t count) {
  auto it = owned_.find(id);
  if (it == owned_.end()) {
    return nullptr;
  }
  auto h = it->second.holders.find(holder);
  if (h != it->second.holders.end() && (h->second -= count) <= 0) {
    it->second.holders.erase(h);
  }
  return collect_locked(id);
}

std::shared_ptr<RefRecord> ObjectTable::take_fork_locked(std::uint64_t token) {
  auto it = forks_.find(token);
  if (it == forks_.end()) {
    return nullptr;
  }
  auto keep = std::move(it->second.keep);
  forks_.erase(it);
  return keep;
}

std::shared_ptr<RefRecord> ObjectTable::local_record_locked(std::uint64_t id, Owned& owned) {
  if (auto existing = owned.local.lock()) {
    return existing;
  }
  auto record = std::make_shared<RefRecord>(self_, id, owned.class_name, owned.object, self_ref_);
  owned.local = record;
  return record;
}

std::shared_ptr<RefRecord> ObjectTable::adopt(std::shared_ptr<void> object, const std::string& class_name) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_object_++;
  Owned& owned = owned_[id];
  owned.object = std::move(object);
  owned.class_name = class_name;
  return local_record_locked(id, owned);
}

std::optional<ObjectTable::Found> ObjectTable::find(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = owned_.find(id);
  if (it == owned_.end()) {
    return std::nullopt;
  }
  return Found{it->second.object, it->second.class_name};
}

json ObjectTable::to_json(const std::shared_ptr<RefRecord>& record, std::int64_t dest) {
  if (!record) {
    throw Error("cannot pass an empty RRef");
  }
  json out = {{"$rref", 1}, {"o", record->owner()}, {"i", record->id()}, {"c", record->class_name()},
              {"t", 0}, {"f", self_}, {"p", false}};
  std::lock_guard lock(mutex_);
  if (record->owner() == self_) {
    auto it = owned_.find(record->id());
    if (it == owned_.end()) {
      throw Error("object #" + std::to_string(record->id()) + " of class '" + record->class_name() + "' is gone");
    }
    // The owner registers the receiver itself; for this node, too (a call to itself), so that the
    // object outlives its handles here until the result is received.
    ++it->second.holders[dest];
    t_registrations.push_back(Registration{self_ref_, record->id(), dest, 0});
    out["p"] = true;
    return out;
  }
  const std::uint64_t token = next_token_++;
  forks_[token] = Fork{record, dest};  // held until the owner registered the receiver
  t_registrations.push_back(Registration{self_ref_, record->id(), dest, token});
  out["t"] = token;
  return out;
}

std::shared_ptr<RefRecord> ObjectTable::from_json(const json& value, const std::string* expected_class) {
  auto has = [&](const char* key, auto check) { return value.contains(key) && (value[key].*check)(); };
  auto count = [&](const char* key) {  // an id or a token: an integer, never negative
    return has(key, &json::is_number_integer) && (value[key].is_number_unsigned() || value[key].get<std::int64_t>() >= 0);
  };
  if (!value.is_object() || !value.contains("$rref") || !has("o", &json::is_number_integer) || !count("i") ||
      !has("c", &json::is_string) || !count("t") || !has("f", &json::is_number_integer) ||
      !has("p", &json::is_boolean)) {
    throw Error("not a remote-object handle: " + value.dump());
  }
  const auto owner = value["o"].get<std::int64_t>();
  const auto id = value["i"].get<std::uint64_t>();
  const auto cls = value["c"].get<std::string>();
  const auto token = value["t"].get<std::uint64_t>();
  const auto from = value["f"].get<std::int64_t>();
  const bool preregistered = value["p"].get<bool>();
  if (expected_class != nullptr && *expected_class != cls) {
    throw Error("a handle to a '" + cls + "' where a '" + *expected_class + "' was expected");
  }
  std::unique_lock lock(mutex_);
  if (owner == self_) {
    auto it = owned_.find(id);
    if (it == owned_.end()) {
      throw Error("object #" + std::to_string(id) + " of class '" + cls + "' is gone from its owner");
    }
    auto record = local_record_locked(id, it->second);
    if (preregistered && from == self_) {  // it went from here to here: the registration ends
      auto h = it->second.holders.find(self_);
      if (h != it->second.holders.end() && --h->second <= 0) {
        it->second.holders.erase(h);
      }
    }
    lock.unlock();
    if (token != 0) {
      send_(from, RefOp::fork_done, id, token, self_);  // it came home: the sender may let go
    }
    return record;
  }
  Held& held = held_[{owner, id}];
  auto record = held.record.lock();
  if (!record) {
    record = std::make_shared<RefRecord>(owner, id, cls, nullptr, self_ref_);
    held = Held{record, record.get(), 0};
  }
  if (preregistered || token != 0) {
    ++held.registrations;
  }
  lock.unlock();
  if (token != 0) {
    send_(owner, RefOp::add, id, token, from);
  }
  return record;
}

void ObjectTable::on_ref(std::int64_t sender, RefOp op, std::uint64_t object, std::uint64_t token,
                         std::int64_t about) {
  std::shared_ptr<void> dead;
  std::shared_ptr<RefRecord> let_go;
  {
    std::lock_guard lock(mutex_);
    switch (op) {
      case RefOp::add: {
        auto it = owned_.find(object);
        if (it == owned_.end()) {
          DITASK_LOG(warn, "rpc") << "node " << sender << " registered a handle to object #" << object
                                  << ", which is gone";
          break;
        }
        ++it->second.holders[sender];
        break;
      }
      case RefOp::release:
        dead = release_locked(object, sender, static_cast<std::int64_t>(token));
        break;
      case RefOp::fork_done:
        let_go = take_fork_locked(token);
        break;
    }
  }
  if (op == RefOp::add) {
    send_(about, RefOp::fork_done, object, token, self_);
  }
  // `dead` and `let_go` go here, outside the lock (a destructor may call back into the table).
}

std::shared_ptr<void> ObjectTable::collect_locked(std::uint64_t id) {
  auto it = owned_.find(id);
  if (it == owned_.end() || !it->second.holders.empty() || !it->second.local.expired()) {
    return nullptr;
  }
  auto object = std::move(it->second.object);
  owned_.erase(it);
  return object;
}

void ObjectTable::record_dropped(const RefRecord& record) noexcept {
  if (cleared_.load()) {
    return;
  }
  std::shared_ptr<void> dead;
  std::int64_t registrations = 0;
  {
    std::lock_guard lock(mutex_);
    if (record.owner() == self_) {
      dead = collect_locked(record.id());
    } else {
      auto it = held_.find({record.owner(), record.id()});
      if (it != held_.end() && it->second.raw == &record) {
        registrations = it->second.registrations;
        held_.erase(it);
      }
    }
  }
  if (registrations > 0) {
    try {
      send_(record.owner(), RefOp::release, record.id(), static_cast<std::uint64_t>(registrations), self_);
    } catch (...) {  // the engine is stopping: its clear() releases what is left
    }
  }
}

void ObjectTable::node_left(std::int64_t node) {
  std::vector<std::shared_ptr<void>> dead;
  std::vector<std::shared_ptr<RefRecord>> let_go;
  {
    std::lock_guard lock(mutex_);
    std::vector<std::uint64_t> ids;
    for (auto& [id, owned] : owned_) {
      if (owned.holders.erase(node) != 0) {
        ids.push_back(id);
      }
    }
    for (auto id : ids) {
      if (auto object = collect_locked(id)) {
        dead.push_back(std::move(object));
      }
    }
    for (auto it = forks_.begin(); it != forks_.end();) {
      if (it->second.dest == node) {
        let_go.push_back(std::move(it->second.keep));
        it = forks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!dead.empty()) {
    DITASK_LOG(debug, "rpc") << "node " << node << " left: " << dead.size() << " object(s) it held released";
  }
}

std::size_t ObjectTable::owned() const {
  std::lock_guard lock(mutex_);
  return owned_.size();
}

std::size_t ObjectTable::held() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

std::vector<std::tuple<std::int64_t, std::uint64_t, std::int64_t>> ObjectTable::clear() noexcept {
  std::vector<std::tuple<std::int64_t, std::uint64_t, std::int64_t>> releases;
  std::map<std::uint64_t, Owned> owned;
  std::map<std::uint64_t, Fork> forks;
  {
    std::lock_guard lock(mutex_);
    cleared_ = true;
    for (const auto& [key, held] : held_) {
      if (held.registrations > 0) {
        releases.emplace_back(key.first, key.second, held.registrations);
      }
    }
    held_.clear();
    owned.swap(owned_);
    forks.swap(forks_);
  }
  return releases;  // `owned` and `forks` (and the objects) go here, outside the lock
}

}  // namespace ditask::detail
