// SPDX-License-Identifier: MIT
// A module whose dependency is missing at load time: the loader must report dlerror's text
// ("libditask_missing_dep.so: cannot open shared object file").
#include <stdexcept>

#include <ditask/ditask.hpp>

int ditask_test_dep_value();

DITASK_MAIN(main) {
  if (ditask_test_dep_value() != 42) {
    throw std::logic_error("unreachable: the dependency cannot be loaded");
  }
}
