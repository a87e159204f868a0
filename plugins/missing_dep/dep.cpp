// SPDX-License-Identifier: MIT
// A library that libmissing_dep.so needs and that no search path finds at load time.
__attribute__((visibility("default"))) int ditask_test_dep_value() { return 42; }
