// SPDX-License-Identifier: MIT
// A minimal module built against the installed package. run.sh checks that it links with
// --no-undefined and exports its entry; nothing loads it.
#include <ditask/ditask.hpp>

DITASK_MAIN(main) {
  auto& task = ditask::task();
  auto running = task.start();
  int got = 0;
  task.on("ping",
          [&got](int n, const ditask::Kwargs& named) { got = n + named.get_or<int>("extra", 0); });
  task.emit("ping", 41, ditask::kw("extra", static_cast<int>(ditask::args().size())));
  task.sync();
  if (got < 41) {
    throw ditask::Error("the ping handler did not run");
  }
}
