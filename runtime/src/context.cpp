// SPDX-License-Identifier: MIT
#include "ditask/context.hpp"

#include <string>

#include "ditask/error.hpp"

namespace ditask {

Context Context::online_rl() {
  Context ctx;
  ctx.keep({"env_step", "env_episode", "train_iter", "last_eval_iter", "last_eval_value"});
  return ctx;
}

void Context::keep(std::initializer_list<std::string> keys) { kept_.insert(keys.begin(), keys.end()); }

Context Context::renew() const {
  Context next;
  next.kept_ = kept_;
  next.total_step = total_step + 1;
  auto kept = [this](const char* key) { return kept_.count(key) != 0; };
  if (kept("env_step")) {
    next.env_step = env_step;
  }
  if (kept("env_episode")) {
    next.env_episode = env_episode;
  }
  if (kept("train_iter")) {
    next.train_iter = train_iter;
  }
  if (kept("last_eval_iter")) {
    next.last_eval_iter = last_eval_iter;
  }
  if (kept("last_eval_value")) {
    next.last_eval_value = last_eval_value;
  }
  for (const auto& [key, value] : data_) {
    if (kept_.count(key) != 0) {
      next.data_.emplace(key, value);
    }
  }
  return next;
}

std::vector<std::string> Context::keys() const {
  std::vector<std::string> out;
  out.reserve(data_.size());
  for (const auto& entry : data_) {
    out.push_back(entry.first);
  }
  return out;
}

std::any& Context::find_checked(const std::string& key, const std::type_info& wanted) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    throw Error("context has no key '" + key + "'", "set it with ctx.set(\"" + key + "\", value) first");
  }
  if (it->second.type() != wanted) {
    throw Error("context key '" + key + "' holds another type than the one asked for",
                "use the same type in ctx.set and ctx.get");
  }
  return it->second;
}

}  // namespace ditask
