// SPDX-License-Identifier: MIT
#include "params.hpp"

#include <cstdlib>
#include <stdexcept>

namespace rl {

Params::Params(const std::vector<std::string>& args, std::set<std::string> known) {
  for (const auto& arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument("module argument '" + arg + "' is not key=value");
    }
    const std::string key = arg.substr(0, eq);
    if (known.count(key) == 0) {
      std::string list;
      for (const auto& k : known) {
        list += (list.empty() ? "" : ", ") + k;
      }
      throw std::invalid_argument("unknown module argument '" + key + "' (known: " + list + ")");
    }
    values_[key] = arg.substr(eq + 1);
  }
}

double Params::num(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    return fallback;
  }
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0') {
    throw std::invalid_argument("module argument " + key + "='" + it->second + "' is not a number");
  }
  return v;
}

long long Params::integer(const std::string& key, long long fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    return fallback;
  }
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') {
    throw std::invalid_argument("module argument " + key + "='" + it->second + "' is not an integer");
  }
  return v;
}

std::string Params::text(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

}  // namespace rl
