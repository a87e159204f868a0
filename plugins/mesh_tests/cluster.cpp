// SPDX-License-Identifier: MIT
// Entries for the cluster tests (Slurm, several hosts): a job that runs until it is told to stop,
// gracefully, and reports the signals and membership changes it saw.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mesh_tests.hpp"

using namespace mesh_tests;

// Runs steps until finish: SIGTERM (the module asks for it: a handler of the local event) sets
// finish; SIGUSR1 is reported; a peer that leaves is reported with its reason. Prints
// "READY peers=..." once the mesh is up, "SIGNAL <name>" per signal, "LEFT <node>:<reason>" per
// leave, and "RESULT stopped gracefully" when run() ended and the task is about to stop.
DITASK_MAIN(graceful) {
  auto& task = ditask::task();
  auto running = task.start();
  task.on("SIGTERM", [] { say("SIGNAL", "SIGTERM"); });
  task.on("SIGUSR1", [] { say("SIGNAL", "SIGUSR1"); });
  task.on(ditask::events::peer_left, [](const ditask::Kwargs& kw) {
    say("LEFT", std::to_string(kw.get<std::int64_t>("node_id")) + ":" + kw.get<std::string>("reason"));
  });
  // Pacing: a step waits (at most 20 ms) for an event that never comes, so run() does not spin.
  task.use([&task](ditask::Context&) { task.wait_for("never", std::chrono::milliseconds(20)); });
  task.ready();
  say("READY", "peers=" + peers_text());
  task.run();
  result("stopped gracefully");
}

// Exits with code=C (default 5) on node=N (default 1) once the mesh is up; the others return 0.
DITASK_MAIN(exit_on_node) {
  auto& task = ditask::task();
  const Params params;
  auto running = task.start();
  if (node_id() == params.integer("node", 1)) {
    say("EXIT", std::to_string(params.integer("code", 5)));
    std::exit(static_cast<int>(params.integer("code", 5)));
  }
  result("ok");
}
