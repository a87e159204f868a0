// SPDX-License-Identifier: MIT
#pragma once

/// Worker mode and module loading, for the launcher and apps/ditask (modules never need this).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/export.hpp"
#include "ditask/runtime/log.hpp"

namespace ditask {

/// What worker mode reads from the environment contract (docs/launcher.md, "Environment contract").
struct WorkerEnv {
  std::int64_t node_id = 0;                ///< DITASK_NODE_ID (required)
  std::int64_t local_id = 0;               ///< DITASK_LOCAL_ID
  std::int64_t parallel_workers = 1;       ///< DITASK_PARALLEL_WORKERS
  std::optional<std::int64_t> world_size;  ///< DITASK_WORLD_SIZE, when known
  std::string listen;                      ///< DITASK_LISTEN (`tcp://host:port`, `ipc:///path`)
  std::vector<std::string> attach_to;      ///< DITASK_ATTACH_TO (comma list)
  std::string topology;                    ///< DITASK_TOPOLOGY
  std::set<std::string> labels;            ///< DITASK_LABELS (comma list), plus role.<r> per role
  std::set<std::string> roles;             ///< DITASK_ROLES (comma list)
  std::string run_id;                      ///< DITASK_RUN_ID
  std::int64_t attempt = 0;                ///< DITASK_ATTEMPT
  std::set<std::int64_t> finished_nodes;   ///< DITASK_FINISHED_NODES (comma list): peers that exited 0 for good
  std::string package;                     ///< DITASK_PACKAGE (required)
  std::string main;                        ///< DITASK_MAIN (required)
  std::optional<log::Level> log_level;     ///< DITASK_LOG_LEVEL
  nlohmann::json plan = nlohmann::json::object();  ///< DITASK_PLAN: JSON text, or a file holding it
};

/// Reads the contract from `env` (variable name -> value; an empty value counts as unset).
/// Errors: ditask::Error naming the variable and its value when a required one is missing or a
/// value is malformed (the hint says worker mode is started by the launcher, not by hand).
WorkerEnv parse_worker_env(const std::map<std::string, std::string>& env);

/// The path to load for `--package`. A path with '/' is used as given; a bare name is looked
/// up as given (relative to the working directory), then in `plugins_dir` as `<name>`,
/// `lib<name>.so`, `<name>.so`; a bare name containing ".so" is then left to the dynamic
/// loader's search path (returned unchanged). Errors: ditask::Error "cannot find package '<p>'"
/// with a hint listing where it looked. Never opens the file.
std::string resolve_package(const std::string& package, const std::string& plugins_dir);

/// Entry names (`DITASK_MAIN(name)`) exported by the module at `path`, sorted. Reads the ELF
/// symbol tables without loading or running anything. Errors: ditask::Error "'<path>' is not a
/// shared library", "cannot read '<path>': <reason>".
std::vector<std::string> list_entries(const std::string& path);

/// An entry function as exported by DITASK_MAIN.
using EntryFn = void (*)();

/// Loads the module (never unloaded) and returns its entry `entry` after checking its ABI
/// version. Runs the module's static initialisers. Thread: any.
/// Errors: ditask::Error (one line, with a hint) for a missing or unreadable file, a file that is
/// not a shared library, a failed dlopen (its message), a missing entry ("did you mean"), an ABI
/// mismatch.
EntryFn load_entry(const std::string& path, const std::string& entry);

/// Worker mode: `argv` after the first literal `--` become ditask::args(); everything else comes
/// from the environment contract. Call it from the main thread before any other thread exists
/// (it blocks SIGUSR1/SIGUSR2 for the whole process and turns them into local events).
/// Returns the process exit code: 0 when the entry returned, 1 when it threw (one line
/// `ditask: error: entry '<main>' failed: <what>` on stderr), 2 for a bad environment or module.
int worker_main(int argc, char** argv);

/// Finds the function a worker runs, once the contract has been read. Errors: ditask::Error.
using EntryResolver = std::function<std::function<void()>(const WorkerEnv&)>;

/// Worker mode around any function (worker_main loads a module's entry; Parallel::runner runs
/// the program's own main_fn): reads the contract, activates the router, turns SIGUSR1/SIGUSR2
/// into local events, calls the function, stops the task if it was left running. `args` become
/// ditask::args(). Call from the main thread before any other thread exists. Returns 0, 1 when
/// the function threw (one `ditask: error: entry '<main>' failed: <what>` line), 2 when the
/// contract or `resolve` failed.
int run_worker(std::vector<std::string> args, const EntryResolver& resolve);

/// `ditask --probe <package> <entry>`: loads the module and looks up the entry without calling
/// it. Returns 0, or prints `ditask: error: ...` (+ hint) and returns 2.
int probe_main(const std::string& package, const std::string& entry);

/// The launcher-only functions above that the launcher calls (bin/ditask, Parallel::runner). The
/// shared runtime exports this one table instead of each function, so they stay out of the SDK's
/// surface; the unit tests, which link the runtime statically, may call the functions directly.
struct WorkerEntryPoints {
  int (*worker_main)(int argc, char** argv);
  int (*run_worker)(std::vector<std::string> args, const EntryResolver& resolve);
  int (*probe_main)(const std::string& package, const std::string& entry);
  std::string (*resolve_package)(const std::string& package, const std::string& plugins_dir);
};

namespace detail {
/// The table of the runtime this process loaded.
DITASK_API const WorkerEntryPoints& worker_entry_points() noexcept;
}  // namespace detail

}  // namespace ditask
