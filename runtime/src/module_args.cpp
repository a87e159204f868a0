// SPDX-License-Identifier: MIT
// ModuleArgs (module.hpp): a module's key=value arguments, checked once.
#include <cerrno>
#include <cstdlib>

#include "ditask/error.hpp"
#include "ditask/module.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask {

namespace {

const char* const kForm = "module arguments go after -- as key=value, e.g. -- seed=3 lr=0.01";

}  // namespace

ModuleArgs::ModuleArgs(std::set<std::string> known) : ModuleArgs(args(), std::move(known)) {}

ModuleArgs::ModuleArgs(const std::vector<std::string>& arguments, std::set<std::string> known) {
  for (const auto& arg : arguments) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error("module argument '" + arg + "' is not key=value", kForm);
    }
    std::string key = arg.substr(0, eq);
    if (!known.empty() && known.count(key) == 0) {
      const std::vector<std::string> keys(known.begin(), known.end());
      const auto close = closest_match(key, keys);
      throw Error("unknown module argument '" + key + "' (known: " + join(keys) + ")",
                  close ? "did you mean '" + *close + "'?" : std::string(kForm));
    }
    values_[std::move(key)] = arg.substr(eq + 1);
  }
}

bool ModuleArgs::has(const std::string& key) const { return values_.count(key) != 0; }

double ModuleArgs::number(const std::string& key, double fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) {
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || errno == ERANGE) {
    throw Error("module argument " + key + "='" + it->second + "' is not a number", "for example " + key + "=0.5");
  }
  return v;
}

std::int64_t ModuleArgs::integer(const std::string& key, std::int64_t fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) {
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || errno == ERANGE) {
    throw Error("module argument " + key + "='" + it->second + "' is not an integer", "for example " + key + "=3");
  }
  return static_cast<std::int64_t>(v);
}

std::string ModuleArgs::text(const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

std::map<std::string, std::int64_t> ModuleArgs::integers(std::map<std::string, std::int64_t> defaults) {
  std::set<std::string> known;
  for (const auto& [key, value] : defaults) {
    known.insert(key);
  }
  const ModuleArgs given(std::move(known));
  for (auto& [key, value] : defaults) {
    value = given.integer(key, value);
  }
  return defaults;
}

}  // namespace ditask
