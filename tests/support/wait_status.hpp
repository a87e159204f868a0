// SPDX-License-Identifier: MIT
// Raw wait statuses (as waitpid reports them) for the launcher's unit tests.
#pragma once

namespace ditask::test {

/// The status of a child that exited with `code`.
constexpr int exited(int code) { return code << 8; }
/// The status of a child killed by signal `sig`.
constexpr int killed(int sig) { return sig; }

}  // namespace ditask::test
