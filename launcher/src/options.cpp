// SPDX-License-Identifier: MIT
#include "ditask/launcher/options.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "ditask/error.hpp"
#include "ditask/launcher/plan.hpp"
#include "ditask/runtime/suggest.hpp"
#include "option_values.hpp"
#include "platform.hpp"

namespace ditask::launcher {

const char* to_string(Source source) noexcept {
  switch (source) {
    case Source::command_line: return "command line";
    case Source::environment: return "environment";
    case Source::config: return "config file";
    case Source::platform_spec: return "platform spec";
    case Source::platform: return "platform environment";
    case Source::default_value: return "default";
  }
  return "default";
}

const std::vector<OptionSpec>& option_specs() {
  using K = OptionSpec::Kind;
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> all;
    auto group = [&all](const char* name, std::vector<OptionSpec> members) {
      for (auto& member : members) {
        member.group = name;
        all.push_back(std::move(member));
      }
    };
    // One option per line reads better than clang-format's one field per line.
    // clang-format off
    group("Module", {
        {"package", "p", K::text, "", {}, "The module: a shared library path, or a bare name looked up as given, then in <prefix>/lib/ditask/plugins/, then, for a name with .so, on the loader's search path"},
        {"main", "m", K::text, "main", {}, "The entry to call: the name given to DITASK_MAIN(name)"},
    });
    group("Workers", {
        {"parallel-workers", "", K::integer, "1", {}, "Workers this launcher starts"},
        {"node-ids", "", K::list, "", {}, "Node ids: one base id (worker i gets base+i) or one per worker. Default 0..N-1"},
        {"labels", "", K::list, "", {}, "Comma list of labels for every local worker (task().router().labels())"},
        {"roles", "", K::list, "", {}, "Roles by node id, e.g. learner:0,evaluator:1,collector:2- (ids N, N-M, N-; a+b:N gives one node two roles): task().has_role(), labels role.<name>"},
        {"layout", "", K::text, "", {}, "A named rank layout that sets --roles and the worker count: biggraph:machines=M[,partition_servers=P] (PyTorch-BigGraph's ProcessRanks: M trainers, M parameter servers, M parameter clients, 1 lock server, P partition servers, M when P < 0 or omitted)"},
        {"world-size", "", K::integer, "", {}, "Workers in the whole job when several launchers form one job (default: this launcher's workers)"},
        {"startup-interval", "", K::number, "0", {}, "Seconds between starting local workers (fractions allowed). DI-engine staggers by 1 s; we need no stagger"},
        {"local_rank", "", K::integer, "0", {}, "Accepted and ignored (torch.distributed.launch compatibility)"},
    });
    group("Mesh", {
        {"protocol", "", K::text, "tcp", {"tcp", "ipc"}, "Mesh transport: tcp, or ipc (Unix sockets)"},
        {"address", "", K::text, "127.0.0.1", {}, "Host/IP the workers listen on (tcp). DI-engine binds the primary address; ours stays on loopback unless told"},
        {"ports", "", K::list, "", {}, "Listen ports: one base port (worker i gets base+i) or one per worker. Default: free ports pre-bound by the launcher"},
        {"attach-to", "", K::list, "", {}, "Comma list of addresses (tcp://host:port, ipc:///path) every local worker also dials"},
        {"topology", "", K::text, "mesh", {"mesh", "star", "alone"}, "Who dials whom. DI-engine defaults to 'alone', which leaves local workers deaf; ours is 'mesh'"},
        {"relay", "", K::flag, "false", {}, "With --topology star: the hub (local worker 0) relays events between the other workers"},
        {"token", "", K::text, "", {}, "Shared secret of the mesh handshake (default: $DITASK_TOKEN; empty = none). Never printed; prefer DITASK_TOKEN, as a command line is visible to other users"},
        {"startup-timeout", "", K::number, "60", {}, "Seconds a worker's task.start() waits for its mesh peers"},
        {"max-frame-bytes", "", K::bytes, "256M", {}, "Largest frame a worker sends or accepts; K, M, G are binary (1024 to 4G-1)"},
        {"send-queue-bytes", "", K::bytes, "8M", {}, "Bound of the send queue to each peer (at least 64K)"},
        {"send-timeout", "", K::number, "30", {}, "Seconds an emit waits for room in a full send queue before failing (--send-policy wait)"},
        {"send-policy", "", K::text, "wait", {"wait", "drop"}, "When a send queue is full: wait (up to --send-timeout), or drop the event, counting and logging it"},
    });
    group("Platform", {
        {"platform", "", K::text, "", {"slurm", "k8s"}, "Read the job layout from a platform's environment"},
        {"platform-spec", "", K::text, "", {}, "Per-task settings for --platform: JSON text or a .json file"},
        {"rendezvous", "", K::text, "", {}, "How the launchers of one job find each other at start: file:///shared/dir, tcp://host:port (served by the rank-0 launcher) or auto (tcp on the job's first host). Default: addresses from the platform's formula or --attach-to"},
        {"host-pattern", "", K::text, "", {}, "--platform k8s in an Indexed Job: the host name of pod {index}, e.g. myjob-{index}.myjob-svc"},
        {"hosts-file", "", K::text, "", {}, "A hosts-format file (address name...) looked up before the system resolver: the listening address, the rendezvous and the workers' dials"},
        {"mq-type", "", K::text, "nng", {"nng", "redis"}, "Message transport: 'nng' (our mesh) or 'redis'"},
        {"redis-host", "", K::text, "127.0.0.1", {}, "Redis host for --mq-type redis"},
        {"redis-port", "", K::integer, "6379", {}, "Redis port for --mq-type redis"},
        {"redis-db", "", K::integer, "0", {}, "Redis database index for --mq-type redis (its presence keys; channels are server-wide)"},
        {"redis-password", "", K::text, "", {}, "Password for Redis AUTH (default: $DITASK_REDIS_PASSWORD; empty = none). Never printed"},
        {"redis-url", "", K::text, "", {}, "redis://[[user]:password@]host[:port][/db], instead of --redis-host/--redis-port/--redis-db/--redis-password"},
    });
    group("Supervision", {
        {"auto-recover", "", K::flag, "false", {}, "Restart a worker that fails on its own (same node id), up to --max-retries"},
        {"max-retries", "", K::integer, "3", {}, "Restarts allowed per worker with --auto-recover"},
        {"restart-backoff", "", K::number, "1", {}, "Seconds before the first restart; doubles per restart, capped at 30 s"},
        {"grace-period", "", K::number, "10", {}, "Seconds between SIGTERM and SIGKILL when stopping workers"},
        {"timeout", "", K::number, "0", {}, "Seconds the whole job may run (0 = no limit); then stop as on SIGTERM and exit 124"},
    });
    group("Output", {
        {"log-dir", "", K::text, "", {}, "Also write each worker's output to <dir>/<run id>/attempt_<k>/node_<id>.log"},
        {"summary-json", "", K::text, "", {}, "At the end, write the run's summary as JSON to this file: each worker's exit, restarts, events, calls, CPU time and peak memory; {node} (first local node id) and {run} are replaced"},
        {"metrics-dir", "", K::text, "", {}, "Each worker writes what it records with ditask::metrics() as TensorBoard event files under <dir>/node-<id> (tensorboard --logdir <dir>)"},
        {"trace", "", K::text, "", {}, "Record every worker's spans (handlers, middleware steps, calls on both sides, collectives, joins) and write them at the end as one Chrome trace file for ui.perfetto.dev or chrome://tracing; {node} and {run} are replaced"},
        {"status", "", K::text, "auto", {"auto", "on", "off"}, "A live status line at the bottom of the terminal: workers running, restarting and exited, events/s, calls/s, the slowest worker, elapsed time; auto = when stderr is a terminal"},
        {"tag-output", "", K::flag, "true", {}, "Prefix each worker output line with --tag-format (--no-tag-output to turn off)"},
        {"tag-format", "", K::text, "[node {node}]", {}, "Prefix of tagged lines; {node}, {rank}, {local} and {attempt} are replaced"},
        {"log-level", "", K::text, "warn", {"error", "warn", "info", "debug", "trace"}, "Launcher and worker log level"},
    });
    group("Run", {
        {"run-id", "", K::text, "", {}, "Id of this run: DITASK_RUN_ID of every worker and the --log-dir folder; A-Z a-z 0-9 . _ : - (at most 128). Default: $DITASK_RUN_ID, else a fresh <UTC time>-<random hex>"},
        {"dry-run", "", K::flag, "false", {}, "Print the plan as JSON and start nothing (never opens the package)"},
        {"config", "", K::text, "", {}, "JSON file whose keys are these option names ('-' or '_')"},
    });
    // clang-format on
    return all;
  }();
  return specs;
}

const OptionSpec* find_option_spec(const std::string& name) {
  for (const auto& spec : option_specs()) {
    if (spec.name == name) {
      return &spec;
    }
  }
  return nullptr;
}

std::string env_name(const std::string& option_name) {
  std::string out = "DITASK_LAUNCH_";
  for (char c : option_name) {
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

namespace {

constexpr std::size_t kMinTokenBytes = 16;

std::vector<std::string> option_names() {
  std::vector<std::string> names;
  for (const auto& spec : option_specs()) {
    names.push_back(spec.name);
  }
  return names;
}

/// A config key in either spelling ("parallel_workers" or "parallel-workers") as an option name.
std::string canonical_key(std::string key) {
  if (find_option_spec(key) != nullptr) {
    return key;
  }
  std::replace(key.begin(), key.end(), '_', '-');
  return key == "local-rank" ? "local_rank" : key;
}

std::string config_value_text(const std::string& key, const nlohmann::json& value) {
  if (canonical_key(key) == "token" && !value.is_string()) {
    throw Error("config key '" + key + "' must be a string",
                "the value is not shown: it is a secret");
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_boolean() || value.is_number()) {
    return value.dump();
  }
  if (value.is_array()) {
    if (const OptionSpec* spec = find_option_spec(canonical_key(key)); spec != nullptr && spec->kind != OptionSpec::Kind::list) {
      std::vector<std::string> lists;
      for (const auto& each : option_specs()) {
        if (each.kind == OptionSpec::Kind::list) {
          lists.push_back(each.name);
        }
      }
      throw Error("config key '" + key + "' takes one value, not a list", "lists are for " + join(lists, ", "));
    }
    std::vector<std::string> items;
    for (const auto& item : value) {
      if (!(item.is_string() || item.is_number())) {
        throw Error("config key '" + key + "': list items must be strings or numbers");
      }
      items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }
    return join(items, ",");
  }
  throw Error("config key '" + key + "' has a value of unsupported type: " + value.dump());
}

/// DITASK_RUN_ID and DITASK_TOKEN of the launcher's own environment are the defaults of
/// --run-id and --token: a script can give every launcher of a multi-launcher job the same run
/// id and secret. An empty DITASK_RUN_ID counts as unset. Errors: a malformed DITASK_RUN_ID.
void use_inherited_defaults(const std::map<std::string, std::string>& env, RawValues& chosen,
                            std::map<std::string, Source>& origins) {
  if (origins["run-id"] == Source::default_value) {
    if (auto inherited = env.find("DITASK_RUN_ID");
        inherited != env.end() && !inherited->second.empty()) {
      detail::check_run_id("DITASK_RUN_ID", inherited->second,
                           "unset DITASK_RUN_ID, or give a valid --run-id");
      chosen["run-id"] = inherited->second;
      origins["run-id"] = Source::environment;
    }
  }
  if (origins["token"] == Source::default_value) {
    if (auto inherited = env.find("DITASK_TOKEN"); inherited != env.end()) {
      chosen["token"] = inherited->second;
      origins["token"] = Source::environment;
    }
  }
  if (origins["redis-password"] == Source::default_value) {
    if (auto inherited = env.find("DITASK_REDIS_PASSWORD"); inherited != env.end()) {
      chosen["redis-password"] = inherited->second;
      origins["redis-password"] = Source::environment;
    }
  }
}

/// Levels 4 and 5 of the chain: the --platform-spec task of this launcher, then the platform's
/// environment, fill the options nothing above set. Returns what the platform read (null when
/// local). Errors: ditask::Error from the platform's variables or spec.
nlohmann::json apply_platform(RawValues& chosen, std::map<std::string, Source>& origins,
                              const std::map<std::string, std::string>& env) {
  const auto platform = chosen.find("platform");
  if (platform == chosen.end()) {
    return nullptr;
  }
  detail::build_options(chosen);  // what is given is checked first, so the numbers below are numbers
  const nlohmann::json spec =
      chosen.count("platform-spec") != 0 ? parse_platform_spec(chosen.at("platform-spec")) : nlohmann::json::object();
  const bool rendezvous = chosen.count("rendezvous") != 0;
  PlatformLayout layout;
  if (platform->second == "slurm") {
    layout = slurm_layout(env, !rendezvous);
  } else {
    const auto text = [&](const char* key) { return chosen.count(key) != 0 ? chosen.at(key) : std::string(); };
    std::int64_t pods = 0;
    if (!text("world-size").empty()) {
      const Options given = detail::build_options(chosen);
      pods = given.world_size / given.parallel_workers;
    }
    layout = k8s_layout(env, pods, text("host-pattern"));
  }
  auto values = platform_values(layout, chosen, spec);
  // Under a platform one --ports is the base of the formula (DI-engine's): tasks sharing a host
  // must not share ports. Its value is what the formula gives this task.
  if (auto given = chosen.find("ports");
      given != chosen.end() && given->second.find(',') == std::string::npos && values.spec.count("ports") == 0 &&
      values.env.count("ports") != 0) {
    given->second = values.env.at("ports");
    origins["ports"] = Source::platform;
  }
  for (const auto& [layer, source] : {std::pair{&values.spec, Source::platform_spec}, std::pair{&values.env, Source::platform}}) {
    for (const auto& [key, value] : *layer) {
      if (chosen.emplace(key, value).second) {
        origins[key] = source;
      }
    }
  }
  return values.info;
}

/// `--rendezvous auto` as the platform means it, who serves a tcp rendezvous, and the shared run
/// id every rendezvous needs. Errors: ditask::Error (usage).
void resolve_rendezvous(Options& options) {
  if (options.rendezvous.empty()) {
    return;
  }
  const auto& info = options.platform_info;
  if (options.rendezvous == "auto") {
    if (!info.is_object() || info.value("auto_rendezvous", "").empty()) {
      throw Error("--rendezvous auto needs --platform slurm or k8s (the job's first host)",
                  "give the place explicitly: --rendezvous tcp://host:port or file:///shared/dir");
    }
    options.rendezvous = info["auto_rendezvous"];
    options.serves_rendezvous = info.value("serves_rendezvous", false);
  } else {
    // An explicit tcp://host:port is served by the launcher of rank 0.
    options.serves_rendezvous = info.is_object() ? info.value("rank", std::int64_t{-1}) == 0
                                                 : options.node_ids.empty() || options.node_ids.front() == 0;
  }
  if (!options.run_id_explicit) {
    throw Error("--rendezvous needs one run id for every launcher of the job",
                "give them the same --run-id (or DITASK_RUN_ID); under Slurm the job and step ids are one");
  }
}

}  // namespace

RawValues load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error("cannot read config file '" + path + "'", "check the path given to --config");
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("config file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!doc.is_object()) {
    throw Error("config file '" + path + "' must hold a JSON object of option names");
  }
  RawValues values;
  for (const auto& [key, value] : doc.items()) {
    std::string name = canonical_key(key);
    if (name == "config") {
      throw Error("config file '" + path + "' names another config file (key 'config')",
                  "a config file cannot include another; merge the two");
    }
    if (name.starts_with("no-") && find_option_spec(name.substr(3)) != nullptr) {
      throw Error("unknown key '" + key + "' in config file '" + path + "'",
                  "write \"" + name.substr(3) + "\": false");
    }
    if (find_option_spec(name) == nullptr) {
      auto guess = closest_match(name, option_names());
      throw Error("unknown key '" + key + "' in config file '" + path + "'",
                  guess ? "did you mean '" + *guess + "'?" : "keys are the option names of ditask --help");
    }
    values[name] = config_value_text(key, value);
  }
  return values;
}

nlohmann::json parse_platform_spec(const std::string& text) {
  std::string body = text;
  const bool is_file = text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0;
  if (is_file) {
    std::ifstream in(text);
    if (!in) {
      throw Error("cannot read --platform-spec file '" + text + "'");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    body = buffer.str();
  }
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("--platform-spec is not valid JSON: ") + e.what(),
                "give JSON text like '{\"tasks\": [...]}' or the path of a .json file");
  }
  if (!spec.is_object() || (spec.contains("tasks") && !spec["tasks"].is_array())) {
    throw Error("--platform-spec must be a JSON object with a 'tasks' array");
  }
  return spec;
}

namespace {

/// A DITASK_LAUNCH_ variable that names no option is a typo (as an unknown config key is), not
/// something to ignore silently. Errors: ditask::Error with "did you mean" when one is close.
void check_launch_variables(const std::map<std::string, std::string>& env) {
  constexpr std::string_view kPrefix = "DITASK_LAUNCH_";
  std::vector<std::string> known;  // the part after the prefix, compared without it
  for (const auto& spec : option_specs()) {
    known.push_back(env_name(spec.name).substr(kPrefix.size()));
  }
  for (const auto& [name, value] : env) {
    if (!name.starts_with(kPrefix)) {
      continue;
    }
    const std::string option = name.substr(kPrefix.size());
    if (std::find(known.begin(), known.end(), option) != known.end()) {
      continue;
    }
    auto guess = closest_match(option, known);
    throw Error("unknown environment variable " + name,
                guess ? "did you mean " + std::string(kPrefix) + *guess + "?"
                      : "the launcher reads DITASK_LAUNCH_<OPTION> for each option of ditask --help (unset this one)");
  }
}

}  // namespace

Options resolve_options(const RawValues& command_line, const std::map<std::string, std::string>& env) {
  check_launch_variables(env);
  auto from_env = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(env_name(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  RawValues config;
  if (auto it = command_line.find("config"); it != command_line.end()) {
    config = load_config(it->second);
  } else if (auto path = from_env("config")) {
    config = load_config(*path);
  }
  RawValues chosen;
  std::map<std::string, Source> origins;
  for (const auto& spec : option_specs()) {
    if (auto it = command_line.find(spec.name); it != command_line.end()) {
      chosen[spec.name] = it->second;
      origins[spec.name] = Source::command_line;
    } else if (auto value = from_env(spec.name)) {
      chosen[spec.name] = *value;
      origins[spec.name] = Source::environment;
    } else if (auto c = config.find(spec.name); c != config.end()) {
      chosen[spec.name] = c->second;
      origins[spec.name] = Source::config;
    } else {
      origins[spec.name] = Source::default_value;
    }
  }
  use_inherited_defaults(env, chosen, origins);
  const nlohmann::json platform_info = apply_platform(chosen, origins, env);
  Options options = detail::build_options(chosen);
  options.platform_info = platform_info;
  options.run_id_explicit = chosen.count("run-id") != 0;
  if (!options.run_id_explicit) {
    options.run_id = make_run_id();
  }
  resolve_rendezvous(options);
  options.origins = std::move(origins);
  for (const auto& spec : option_specs()) {
    auto it = chosen.find(spec.name);
    options.values[spec.name] = it != chosen.end() ? it->second : spec.default_text;
  }
  options.values["run-id"] = options.run_id;
  options.values["token"] = options.token.empty() ? "" : kHiddenToken;
  options.values["redis-password"] = options.redis.password.empty() ? "" : kHiddenToken;
  if (chosen.count("redis-url") != 0) {
    const auto& r = options.redis;
    options.values["redis-url"] = "redis://" + (r.user.empty() && r.password.empty() ? std::string()
                                               : r.user + (r.password.empty() ? "" : ":" + std::string(kHiddenToken)) + "@") +
                                  r.host + ":" + std::to_string(r.port) + "/" + std::to_string(r.db);
  }
  return options;
}

std::vector<std::string> option_warnings(const Options& options) {
  std::vector<std::string> warnings;
  if (!options.token.empty() && options.token.size() < kMinTokenBytes) {
    warnings.push_back("--token is shorter than " + std::to_string(kMinTokenBytes) + " bytes");
  }
  return warnings;
}

}  // namespace ditask::launcher
