// SPDX-License-Identifier: MIT
#include "rpc_registry.hpp"

#include <mutex>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::detail {

void RpcRegistry::define(std::string name, Handlers handlers, bool concurrent, bool on_arrival) {
  auto entry = std::make_shared<const RpcEntry>(name, std::move(handlers), concurrent, on_arrival);
  std::unique_lock lock(mutex_);
  functions_[std::move(name)] = std::move(entry);
}

bool RpcRegistry::undefine(std::string_view name) {
  std::unique_lock lock(mutex_);
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    return false;
  }
  functions_.erase(it);
  return true;
}

std::shared_ptr<const RpcEntry> RpcRegistry::function(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

void RpcRegistry::define_class(std::type_index type, const std::string& name) {
  std::unique_lock lock(mutex_);
  auto known = class_names_.find(type);
  if (known != class_names_.end() && *known->second != name) {
    throw Error("class already defined as '" + *known->second + "', cannot define it again as '" + name + "'");
  }
  auto [it, added] = classes_.try_emplace(name);
  it->second.name = name;
  class_names_[type] = &it->first;
}

void RpcRegistry::define_named_class(const std::string& name) {
  std::unique_lock lock(mutex_);
  for (const auto& [type, bound] : class_names_) {
    if (*bound == name) {
      throw Error("class '" + name + "' is already defined for a C++ type in this process",
                  "give the other language's class another name");
    }
  }
  RpcClass& named = classes_[name];
  named.name = name;
  named.methods.clear();  // a new definition's methods replace the old ones
}

bool RpcRegistry::has_class(std::string_view name) const {
  std::shared_lock lock(mutex_);
  return classes_.find(name) != classes_.end();
}

void RpcRegistry::define_method(const std::string& class_name, std::string method, Handlers handlers,
                                bool concurrent) {
  std::unique_lock lock(mutex_);
  auto it = classes_.find(class_name);
  if (it == classes_.end()) {
    throw Error("class '" + class_name + "' is not defined", "call rpc().define_class<T>(\"" + class_name + "\") first");
  }
  auto entry = std::make_shared<const RpcEntry>(class_name + "." + method, std::move(handlers), concurrent);
  it->second.methods[std::move(method)] = std::move(entry);
}

std::shared_ptr<const RpcEntry> RpcRegistry::method(std::string_view class_name, std::string_view method) const {
  std::shared_lock lock(mutex_);
  auto it = classes_.find(class_name);
  if (it == classes_.end()) {
    return nullptr;
  }
  auto m = it->second.methods.find(method);
  return m == it->second.methods.end() ? nullptr : m->second;
}

const std::string* RpcRegistry::class_name(std::type_index type) const {
  std::shared_lock lock(mutex_);
  auto it = class_names_.find(type);
  return it == class_names_.end() ? nullptr : it->second;
}

std::string RpcRegistry::suggest(std::string_view class_name, std::string_view name) const {
  std::vector<std::string> candidates;
  {
    std::shared_lock lock(mutex_);
    if (class_name.empty()) {
      for (const auto& [known, entry] : functions_) {
        if (known.find(' ') == std::string::npos) {  // not a constructor ("new <Class>")
          candidates.push_back(known);
        }
      }
    } else if (auto it = classes_.find(class_name); it != classes_.end()) {
      for (const auto& [known, entry] : it->second.methods) {
        if (!known.starts_with("__")) {
          candidates.push_back(known);
        }
      }
    }
  }
  auto best = closest_match(std::string(name), candidates);
  return best ? "did you mean '" + *best + "'?" : std::string();
}

RpcRegistry& rpc_registry() {
  static RpcRegistry registry;
  return registry;
}

}  // namespace ditask::detail
