// SPDX-License-Identifier: MIT
// The greeting example (README, docs/runtime.md): node 0 listens for "greeting", the other nodes send one.
#include <cstdint>
#include <iostream>
#include <string>

#include <ditask/ditask.hpp>

// `ditask --package greeting --main main_entry --parallel-workers 3`
DITASK_MAIN(main_entry) {
  auto& task = ditask::task();
  auto running = task.start({.async_mode = false});
  if (task.router().node_id() == 0) {
    // One write per line: the handler runs on the dispatcher thread while main goes on.
    task.on("greeting", [](std::string msg) { std::cout << ("Get msg: " + msg + "\n"); });
  } else {
    task.emit("greeting", std::string("Hi"));
  }
  std::int64_t steps = 0;
  task.use([&steps](ditask::Context&) { ++steps; });
  task.run(10);
  std::cout << ("node " + std::to_string(task.router().node_id()) + " ran " + std::to_string(steps) + " steps\n");
}

// `ditask --package greeting --parallel-workers 2`: the smallest possible module.
DITASK_MAIN(main) {
  const auto& router = ditask::task().router();
  std::cout << "hello from node " << router.node_id() << " of " << router.parallel_workers()
            << "\n";
}
