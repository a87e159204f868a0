// SPDX-License-Identifier: MIT
// The child of the spawn tests: tells its parent, from main (so its dynamic loader is done and
// has closed what it opened), that it started, then waits to be killed.
#include <unistd.h>

int main() {
  static const char kStarted[] = "started\n";
  if (::write(STDOUT_FILENO, kStarted, sizeof kStarted - 1) < 0) {
    return 1;
  }
  for (;;) {
    ::pause();
  }
}
