// SPDX-License-Identifier: MIT
// What the launcher option tests share: resolving a command line with a package and no
// environment, and the error it throws.
#pragma once

#include <map>
#include <string>

#include "error_of.hpp"

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"

namespace ditask::test::options_support {

/// Environment variables by name.
using Env = std::map<std::string, std::string>;

/// The command line `values` plus a package, resolved with `env` as the environment.
inline launcher::Options resolve(launcher::RawValues values, const Env& env = {}) {
  values.emplace("package", "./libfoo.so");
  return launcher::resolve_options(values, env);
}

/// The error resolving the command line `values` (plus a package) throws.
inline ditask::Error resolve_error(const launcher::RawValues& values) {
  return error_of([&] { resolve(values); });
}

}  // namespace ditask::test::options_support
