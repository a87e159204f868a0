// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

#include "ditask/launcher/options.hpp"

namespace ditask::app {

/// What the command line asked for.
struct CommandLine {
  launcher::RawValues values;            ///< options given on the command line, as typed
  std::vector<std::string> module_args;  ///< everything after `--`
  bool exit_now = false;                 ///< --help or --version was printed
};

/// Parses the launcher's command line with CLI11 (the only TU that includes it).
/// Errors: ditask::Error in the `ditask: error:` format (exit 2), with a did-you-mean hint for
/// an unknown flag.
CommandLine parse_command_line(int argc, char** argv);

}  // namespace ditask::app
