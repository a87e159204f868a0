// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/launcher/roles.hpp"

namespace ditask::launcher {

/// Where an option's value came from, highest precedence first.
enum class Source { command_line, environment, config, platform_spec, platform, default_value };

/// The name of a Source as printed by --dry-run ("command line", "environment", ...).
const char* to_string(Source source) noexcept;

/// How one launcher option is spelled and typed; the table drives CLI, env, config and --help.
struct OptionSpec {
  /// `number`: seconds, fractions allowed. `bytes`: an integer with an optional binary K/M/G.
  /// `list`: text of comma-separated items (a JSON array in a config file; the only kind that
  /// takes one).
  enum class Kind { text, integer, number, bytes, flag, list };
  std::string name;         ///< long name without dashes, e.g. "parallel-workers"
  std::string short_name;   ///< e.g. "p", or empty
  Kind kind = Kind::text;
  std::string default_text; ///< shown in --help; empty when there is none
  std::vector<std::string> choices;  ///< allowed values (text options), empty = any
  std::string help;
  std::string group = {};  ///< the --help section, e.g. "Mesh"
};

/// The hint for a flag given a value that is not a truth value, whatever its source.
inline constexpr const char* kFlagValueHint = "a flag takes true or false, 1 or 0, yes or no, on or off";

/// Every launcher option, in --help order, each group's options together.
const std::vector<OptionSpec>& option_specs();
/// The option called `name` (long name without dashes), or null.
const OptionSpec* find_option_spec(const std::string& name);

/// The environment variable that can set option `name`: DITASK_LAUNCH_<NAME> (upper case,
/// '-' as '_'). These never collide with the worker contract's DITASK_* names.
std::string env_name(const std::string& option_name);

/// Raw option values by name (as typed), before resolution.
using RawValues = std::map<std::string, std::string>;

/// The Redis server of --mq-type redis and the login to it.
struct RedisServer {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user;      ///< empty: AUTH with the password alone
  std::string password;  ///< empty: no AUTH. Never printed
  int db = 0;
};

/// The resolved, validated launch request.
struct Options {
  std::string package;
  std::string main = "main";
  std::int64_t parallel_workers = 1;
  std::string protocol = "tcp";
  std::string address = "127.0.0.1";
  std::vector<std::int64_t> ports;       ///< empty: launcher picks free ports
  std::vector<std::string> attach_to;
  std::vector<std::string> labels;
  std::vector<RoleEntry> roles;          ///< --roles as parsed; empty: none (modules choose)
  std::string layout;                    ///< --layout as given; empty: none (then roles came from --roles)
  std::string layout_text;               ///< that layout for people (RankLayout::describe)
  std::vector<std::int64_t> node_ids;    ///< as given (padded later by the plan)
  std::string topology = "mesh";
  std::string platform;                  ///< empty: local
  nlohmann::json platform_info;          ///< what --platform read (for --dry-run); null when local
  std::string rendezvous;                ///< --rendezvous: file:///dir or tcp://host:port (auto resolved); empty: none
  bool serves_rendezvous = false;        ///< this launcher serves a tcp rendezvous (else: the rank-0 one)
  std::string hosts_file;                ///< --hosts-file
  std::map<std::string, std::string> hosts;  ///< its names -> addresses
  std::string mq_type = "nng";
  RedisServer redis;                     ///< --redis-url / --redis-host ... (used with --mq-type redis)
  double startup_interval = 0.0;         ///< seconds between local worker starts
  bool auto_recover = false;
  std::int64_t max_retries = 3;
  double restart_backoff = 1.0;          ///< seconds; doubles per retry, capped
  double grace_period = 10.0;            ///< seconds between SIGTERM and SIGKILL
  double timeout = 0.0;                  ///< seconds for the whole job; 0 = none
  std::int64_t world_size = 0;           ///< 0: the local worker count
  std::string log_dir;
  std::string summary_json;              ///< --summary-json FILE ({node}, {run} not yet replaced)
  std::string status = "auto";
  std::string trace;                     ///< --trace FILE: one Chrome trace of every worker ({node}, {run} replaced)
  std::string metrics_dir;               ///< --metrics-dir: each worker's TensorBoard files under <dir>/node-<id>           ///< --status: auto (stderr is a terminal), on, off
  bool tag_output = true;
  std::string tag_format = "[node {node}]";
  bool dry_run = false;
  std::string log_level = "warn";
  std::vector<std::string> module_args;  ///< after `--`

  // The mesh settings workers get in DITASK_PLAN ("run_id_explicit" and "mesh").
  std::string run_id;             ///< --run-id, DITASK_RUN_ID or fresh; empty: launch picks one
  bool run_id_explicit = false;   ///< true unless the run id is a fresh make_run_id()
  std::string token;              ///< mesh handshake secret; empty = none. Never printed
  double startup_timeout = 60.0;  ///< seconds task.start() waits for its mesh peers
  std::int64_t max_frame_bytes = std::int64_t{256} << 20;  ///< topic + payload of one frame
  std::int64_t send_queue_bytes = std::int64_t{8} << 20;  ///< bound of each peer's send queue
  double send_timeout = 30.0;        ///< seconds an emit waits for room in a full send queue
  std::string send_policy = "wait";  ///< "wait", or "drop" (count and log instead of waiting)
  bool relay = false;                ///< star hub (local worker 0) relays between spokes

  /// For each option name, where its value came from.
  std::map<std::string, Source> origins;
  /// For each option name, the text of the value chosen (the default's text when not given);
  /// "<hidden>" for a token, so printing these never shows the secret.
  RawValues values;
};

/// What --dry-run and every other printout show instead of a token.
inline constexpr const char* kHiddenToken = "<hidden>";

/// Resolves options along one chain: command line > DITASK_LAUNCH_* environment > --config
/// file > defaults (platform layers arrive with the platform issues). `env` is the launcher's
/// environment; its DITASK_RUN_ID and DITASK_TOKEN are the defaults of --run-id and --token,
/// and without a run id a fresh one is made. Errors: ditask::Error (usage: exit 2) naming the
/// option and the bad value (never a token's value).
Options resolve_options(const RawValues& command_line, const std::map<std::string, std::string>& env);

/// Warnings about valid but risky options (e.g. a short --token), as lines without the
/// "ditask: warning: " prefix.
std::vector<std::string> option_warnings(const Options& options);

/// Reads a --config JSON file: an object whose keys are option names ('-' or '_' spelling).
/// Errors: ditask::Error for an unreadable file, malformed JSON or an unknown key.
RawValues load_config(const std::string& path);

/// Parses --platform-spec: JSON text, or the path of a .json file. Errors: ditask::Error.
nlohmann::json parse_platform_spec(const std::string& text);

}  // namespace ditask::launcher
