// SPDX-License-Identifier: MIT
// A minimal module built against the installed package. run.sh checks that it links with
// --no-undefined and exports its entry, then runs it with the installed launcher:
//   <prefix>/bin/ditask --package <path>/package_module.so --main main --parallel-workers 2 -- one
// Every worker prints "package_module: node <id> of <n> got <41 + number of module arguments>"
// (the launcher tags it "[node <id>] ").
#include <cstdio>

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
  const auto& router = task.router();
  std::printf("package_module: node %lld of %lld got %d\n", static_cast<long long>(router.node_id()),
              static_cast<long long>(router.parallel_workers()), got);
}
