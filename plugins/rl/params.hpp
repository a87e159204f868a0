// SPDX-License-Identifier: MIT
// The module arguments of the RL examples: `key=value` pairs after `--` on the ditask command line
// (`ditask --package cartpole ... -- seed=3 threshold=100`), each key from a known list.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace rl {

/// Thread: one owner. Errors (all std::invalid_argument, naming the argument): an argument
/// without '=', an unknown key (listing the known ones), a value that is not a number.
class Params {
 public:
  Params(const std::vector<std::string>& args, std::set<std::string> known);
  /// The number `key`, or `fallback` when absent.
  double num(const std::string& key, double fallback) const;
  /// The integer `key`, or `fallback` when absent.
  long long integer(const std::string& key, long long fallback) const;
  /// The text `key`, or `fallback` when absent.
  std::string text(const std::string& key, const std::string& fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace rl
