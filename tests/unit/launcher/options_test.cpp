// SPDX-License-Identifier: MIT
// Option resolution: precedence (command line > DITASK_LAUNCH_* > --config > defaults), value
// origins, and every usage error with its exact text.
#include "ditask/launcher/options.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "options_support.hpp"

#include "ditask/error.hpp"
#include "ditask/launcher/plan.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using ditask::launcher::load_config;
using ditask::launcher::Options;
using ditask::launcher::RawValues;
using ditask::launcher::resolve_options;
using ditask::launcher::Source;

using ditask::test::error_of;
using ditask::test::TempDir;
using namespace ditask::test::options_support;

TEST_CASE("launcher option defaults", "[launcher][options]") {
  const Options o = resolve({});
  CHECK(o.package == "./libfoo.so");
  CHECK(o.main == "main");
  CHECK(o.parallel_workers == 1);
  CHECK(o.topology == "mesh");
  CHECK(o.address == "127.0.0.1");
  CHECK(o.protocol == "tcp");
  CHECK(o.mq_type == "nng");
  CHECK(o.platform.empty());
  CHECK(o.startup_interval == 0.0);
  CHECK(o.max_retries == 3);
  CHECK_FALSE(o.auto_recover);
  CHECK(o.grace_period == 10.0);
  CHECK(o.timeout == 0.0);
  CHECK(o.world_size == 0);
  CHECK(o.ports.empty());
  CHECK(o.node_ids.empty());
  CHECK(o.attach_to.empty());
  CHECK(o.tag_output);
  CHECK(o.tag_format == "[node {node}]");
  CHECK_FALSE(o.dry_run);
  CHECK(o.log_level == "warn");

  CHECK(o.origins.at("package") == Source::command_line);
  CHECK(o.origins.at("topology") == Source::default_value);
  CHECK(o.values.at("topology") == "mesh");
  CHECK(o.values.at("address") == "127.0.0.1");
  CHECK(o.values.at("max-retries") == "3");
  // Every option has an origin and a value text, for --dry-run.
  for (const auto& spec : ditask::launcher::option_specs()) {
    CHECK(o.origins.count(spec.name) == 1);
    CHECK(o.values.count(spec.name) == 1);
  }
}

TEST_CASE("launcher option environment variable names", "[launcher][options]") {
  using ditask::launcher::env_name;
  CHECK(env_name("parallel-workers") == "DITASK_LAUNCH_PARALLEL_WORKERS");
  CHECK(env_name("package") == "DITASK_LAUNCH_PACKAGE");
  CHECK(env_name("local_rank") == "DITASK_LAUNCH_LOCAL_RANK");
  // No launcher variable may be read by workers as part of their contract.
  for (const char* contract :
       {"DITASK_NODE_ID", "DITASK_LOCAL_ID", "DITASK_PARALLEL_WORKERS", "DITASK_WORLD_SIZE",
        "DITASK_LISTEN", "DITASK_ATTACH_TO", "DITASK_TOPOLOGY", "DITASK_LABELS", "DITASK_RUN_ID",
        "DITASK_ATTEMPT", "DITASK_PLAN", "DITASK_PACKAGE", "DITASK_MAIN", "DITASK_LOG_LEVEL"}) {
    for (const auto& spec : ditask::launcher::option_specs()) {
      CHECK(env_name(spec.name) != contract);
    }
  }
}

TEST_CASE("launcher options precedence: command line > environment > config > default",
          "[launcher][options]") {
  TempDir dir;
  const std::string config = dir.write("job.json", R"({
    "package": "from_config",
    "parallel-workers": 2,
    "topology": "star",
    "labels": ["a", "b"],
    "max_retries": 7
  })");
  const Env env = {{"DITASK_LAUNCH_PARALLEL_WORKERS", "3"},
                   {"DITASK_LAUNCH_TOPOLOGY", "alone"},
                   {"DITASK_NODE_ID", "9"}};  // a worker variable, not an option
  const Options o = resolve_options({{"config", config}, {"topology", "mesh"}}, env);

  CHECK(o.topology == "mesh");
  CHECK(o.origins.at("topology") == Source::command_line);
  CHECK(o.parallel_workers == 3);
  CHECK(o.origins.at("parallel-workers") == Source::environment);
  CHECK(o.values.at("parallel-workers") == "3");
  CHECK(o.package == "from_config");
  CHECK(o.origins.at("package") == Source::config);
  CHECK(o.labels == std::vector<std::string>{"a", "b"});
  CHECK(o.values.at("labels") == "a,b");
  CHECK(o.max_retries == 7);
  CHECK(o.origins.at("max-retries") == Source::config);
  CHECK(o.origins.at("config") == Source::command_line);
  CHECK(o.origins.at("address") == Source::default_value);
  CHECK(o.node_ids.empty());

  CHECK(std::string(ditask::launcher::to_string(Source::command_line)) == "command line");
  CHECK(std::string(ditask::launcher::to_string(Source::environment)) == "environment");
  CHECK(std::string(ditask::launcher::to_string(Source::config)) == "config file");
  CHECK(std::string(ditask::launcher::to_string(Source::default_value)) == "default");
}

TEST_CASE("the config file can come from DITASK_LAUNCH_CONFIG", "[launcher][options]") {
  TempDir dir;
  const std::string config =
      dir.write("job.json", R"({"package": "greeting", "parallel_workers": 5})");
  const Options o = resolve_options({}, {{"DITASK_LAUNCH_CONFIG", config}});
  CHECK(o.package == "greeting");
  CHECK(o.parallel_workers == 5);
  CHECK(o.origins.at("config") == Source::environment);
  CHECK(o.origins.at("parallel-workers") == Source::config);
}

TEST_CASE("load_config accepts both spellings and JSON value types", "[launcher][options]") {
  TempDir dir;
  SECTION("dash and underscore") {
    CHECK(load_config(dir.write("a.json", R"({"parallel-workers": 4})")).at("parallel-workers") ==
          "4");
    CHECK(load_config(dir.write("b.json", R"({"parallel_workers": 4})")).at("parallel-workers") ==
          "4");
    CHECK(load_config(dir.write("c.json", R"({"local_rank": 0})")).at("local_rank") == "0");
    CHECK(load_config(dir.write("d.json", R"({"local-rank": 0})")).at("local_rank") == "0");
  }
  SECTION("value types") {
    const RawValues v = load_config(dir.write("types.json", R"({
      "package": "greeting", "startup_interval": 0.25, "auto-recover": true,
      "ports": [6000, 6001], "attach_to": ["tcp://10.0.0.1:5000", "ipc:///tmp/x.sock"],
      "node-ids": 4
    })"));
    CHECK(v.at("package") == "greeting");
    CHECK(v.at("startup-interval") == "0.25");
    CHECK(v.at("auto-recover") == "true");
    CHECK(v.at("ports") == "6000,6001");
    CHECK(v.at("attach-to") == "tcp://10.0.0.1:5000,ipc:///tmp/x.sock");
    CHECK(v.at("node-ids") == "4");
  }
  SECTION("an empty object") { CHECK(load_config(dir.write("empty.json", "{}")).empty()); }
}

TEST_CASE("load_config errors", "[launcher][options]") {
  TempDir dir;
  SECTION("unreadable file") {
    const std::string path = dir.file("missing.json");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("cannot read config file '" + path + "'"));
    CHECK_THAT(e.hint(), Contains("--config"));
  }
  SECTION("malformed JSON") {
    const std::string path = dir.write("bad.json", R"({"package": "greeting",)");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), StartsWith("config file '" + path + "' is not valid JSON: "));
  }
  SECTION("not an object") {
    const std::string path = dir.write("list.json", R"(["--package", "greeting"])");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(),
               Equals("config file '" + path + "' must hold a JSON object of option names"));
  }
  SECTION("unknown key, with a guess") {
    const std::string path = dir.write("typo.json", R"({"parallel_worker": 2})");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("unknown key 'parallel_worker' in config file '" + path + "'"));
    CHECK_THAT(e.hint(), Equals("did you mean 'parallel-workers'?"));
  }
  SECTION("unknown key, no guess") {
    const std::string path = dir.write("odd.json", R"({"colour": "blue"})");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("unknown key 'colour' in config file '" + path + "'"));
    CHECK_THAT(e.hint(), Contains("--help"));
  }
  SECTION("a config may not name another config") {
    const std::string path = dir.write("nested.json", R"({"config": "other.json"})");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("config file '" + path + "' names another config file (key 'config')"));
    CHECK_THAT(e.hint(), Equals("a config file cannot include another; merge the two"));
  }
  SECTION("a negated flag as a key") {
    const std::string path = dir.write("negated.json", R"({"no-tag-output": true})");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("unknown key 'no-tag-output' in config file '" + path + "'"));
    CHECK_THAT(e.hint(), Equals("write \"tag-output\": false"));
  }
  SECTION("a list for an option that takes one value") {
    const std::string path = dir.write("two_packages.json", R"({"package": ["a.so", "b.so"]})");
    auto e = error_of([&] { load_config(path); });
    CHECK_THAT(e.what(), Equals("config key 'package' takes one value, not a list"));
    CHECK_THAT(e.hint(), Equals("lists are for node-ids, labels, roles, ports, attach-to"));
    // A list of one is still a list.
    CHECK_THROWS_AS(load_config(dir.write("one.json", R"({"timeout": [5]})")), ditask::Error);
  }
  SECTION("unsupported value type") {
    const std::string path = dir.write("object.json", R"({"labels": {"a": 1}})");
    CHECK_THAT(error_of([&] { load_config(path); }).what(),
               Contains("config key 'labels' has a value of unsupported type"));
  }
  SECTION("a config error surfaces through resolve_options") {
    const std::string path = dir.write("bad.json", "{");
    CHECK_THROWS_AS(resolve_options({{"config", path}}, {}), ditask::Error);
  }
}

TEST_CASE("an unknown DITASK_LAUNCH_ variable is an error, as an unknown config key is", "[launcher][options]") {
  auto e = error_of([] { resolve({}, {{"DITASK_LAUNCH_PARALLEL_WORKER", "2"}}); });
  CHECK_THAT(e.what(), Equals("unknown environment variable DITASK_LAUNCH_PARALLEL_WORKER"));
  CHECK_THAT(e.hint(), Equals("did you mean DITASK_LAUNCH_PARALLEL_WORKERS?"));
  e = error_of([] { resolve({}, {{"DITASK_LAUNCH_NOPE", "1"}}); });
  CHECK_THAT(e.what(), Equals("unknown environment variable DITASK_LAUNCH_NOPE"));
  CHECK_THAT(e.hint(), Equals("the launcher reads DITASK_LAUNCH_<OPTION> for each option of ditask --help "
                              "(unset this one)"));
  // Every option has its variable, and other DITASK_ variables are not the launcher's to judge.
  CHECK(resolve({}, {{"DITASK_LAUNCH_REDIS_URL", "redis://127.0.0.1:6390"}, {"DITASK_NODE_ID", "x"}}).redis.port ==
        6390);
}

TEST_CASE("launcher options: accepted values", "[launcher][options]") {
  SECTION("fractional seconds") {
    const Options o =
        resolve({{"startup-interval", "0.25"}, {"grace-period", "1.5"}, {"timeout", "30"}});
    CHECK(o.startup_interval == 0.25);
    CHECK(o.grace_period == 1.5);
    CHECK(o.timeout == 30.0);
  }
  SECTION("lists") {
    const Options o = resolve({{"parallel-workers", "3"},
                               {"ports", "7000, 7001,7002"},
                               {"node-ids", "4,8,2"},
                               {"labels", "learner, collector"},
                               {"attach-to", "tcp://10.0.0.2:5000,ipc:///tmp/a.sock"}});
    CHECK(o.ports == std::vector<std::int64_t>{7000, 7001, 7002});
    CHECK(o.node_ids == std::vector<std::int64_t>{4, 8, 2});
    CHECK(o.labels == std::vector<std::string>{"learner", "collector"});
    CHECK(o.attach_to == std::vector<std::string>{"tcp://10.0.0.2:5000", "ipc:///tmp/a.sock"});
  }
  SECTION("one base port and one base node id for many workers") {
    const Options o = resolve({{"parallel-workers", "4"}, {"ports", "7000"}, {"node-ids", "10"}});
    CHECK(o.ports == std::vector<std::int64_t>{7000});
    CHECK(o.node_ids == std::vector<std::int64_t>{10});
  }
  SECTION("choices") {
    const Options o = resolve(
        {{"topology", "star"}, {"protocol", "ipc"}, {"log-level", "debug"}, {"mq-type", "nng"}});
    CHECK(o.topology == "star");
    CHECK(o.protocol == "ipc");
    CHECK(o.log_level == "debug");
    CHECK(o.mq_type == "nng");
  }
  SECTION("flags") {
    const Options o =
        resolve({{"auto-recover", "true"}, {"tag-output", "false"}, {"dry-run", "1"}});
    CHECK(o.auto_recover);
    CHECK_FALSE(o.tag_output);
    CHECK(o.dry_run);
  }
  SECTION("world size at least the local workers") {
    const Options o = resolve({{"parallel-workers", "2"}, {"world-size", "8"}, {"node-ids", "4"}});
    CHECK(o.world_size == 8);
  }
  SECTION("local_rank is accepted") { CHECK_NOTHROW(resolve({{"local_rank", "3"}})); }
}

TEST_CASE("launcher options: usage errors", "[launcher][options]") {
  SECTION("missing package") {
    auto e = error_of([] { resolve_options({{"parallel-workers", "2"}}, {}); });
    CHECK_THAT(e.what(), Equals("missing --package"));
    CHECK_THAT(e.hint(), Contains("--package"));
    CHECK_THROWS_AS(resolve_options({{"package", ""}}, {}), ditask::Error);
  }
  SECTION("parallel-workers 0 and negative") {
    CHECK_THAT(resolve_error({{"parallel-workers", "0"}}).what(),
               Equals("--parallel-workers must be at least 1, got 0"));
    CHECK_THAT(resolve_error({{"parallel-workers", "-1"}}).what(),
               Equals("--parallel-workers must be at least 1, got -1"));
  }
  SECTION("not an integer") {
    CHECK_THAT(resolve_error({{"parallel-workers", "two"}}).what(),
               Equals("--parallel-workers expects an integer, got 'two'"));
    CHECK_THAT(resolve_error({{"parallel-workers", "2.5"}}).what(),
               Equals("--parallel-workers expects an integer, got '2.5'"));
    CHECK_THAT(resolve_error({{"parallel-workers", ""}}).what(),
               Equals("--parallel-workers expects an integer, got ''"));
    CHECK_THAT(resolve_error({{"max-retries", "3x"}}).what(),
               Equals("--max-retries expects an integer, got '3x'"));
    CHECK_THAT(resolve_error({{"ports", "7000,abc"}}).what(),
               Equals("--ports expects an integer, got 'abc'"));
  }
  SECTION("a --tag-format placeholder that does not exist") {
    auto e = resolve_error({{"tag-format", "[n{nod}]"}});
    CHECK_THAT(e.what(), Equals("--tag-format '[n{nod}]': unknown placeholder '{nod}'"));
    CHECK_THAT(e.hint(), Equals("did you mean '{node}'? (placeholders: {node}, {rank}, {local}, {attempt})"));
    CHECK_THAT(resolve_error({{"tag-format", "[{node"}}).what(),
               Equals("--tag-format '[{node': unknown placeholder '{node'"));
    // Known ones, repeated or none at all, and a lone '}' are fine.
    CHECK(resolve({{"tag-format", "{node}/{rank}/{local}/{attempt}/{node}}"}}).tag_format ==
          "{node}/{rank}/{local}/{attempt}/{node}}");
    CHECK(resolve({{"tag-format", "plain"}}).tag_format == "plain");
  }
  SECTION("not a number") {
    CHECK_THAT(resolve_error({{"startup-interval", "soon"}}).what(),
               Equals("--startup-interval expects a number of seconds, got 'soon'"));
    CHECK_THAT(resolve_error({{"timeout", "1s"}}).what(),
               Equals("--timeout expects a number of seconds, got '1s'"));
    CHECK_THAT(resolve_error({{"timeout", "inf"}}).what(), Contains("expects a number of seconds"));
  }
  SECTION("more seconds than a timer holds") {
    // 1e10 s is past what a steady_clock deadline holds in nanoseconds: such a timer fired at
    // once (a --timeout 1e10 job ended after 0.02 s with exit 124).
    auto e = resolve_error({{"timeout", "1e10"}});
    CHECK_THAT(e.what(), Equals("--timeout must be at most 1e9 seconds (about 31 years), got '1e10'"));
    CHECK_THAT(e.hint(), Equals("--timeout 0 means no time limit"));
    CHECK_THAT(resolve_error({{"restart-backoff", "1e300"}}).what(),
               Equals("--restart-backoff must be at most 1e9 seconds (about 31 years), got '1e300'"));
    CHECK_THAT(resolve_error({{"startup-interval", "9300000000"}}).what(), Contains("at most 1e9 seconds"));
    CHECK_THAT(resolve_error({{"grace-period", "1e10"}}).what(), Contains("at most 1e9 seconds"));
    CHECK_THAT(resolve_error({{"startup-timeout", "1e10"}}).what(), Contains("at most 1e9 seconds"));
    CHECK(resolve({{"timeout", "1e9"}}).timeout == 1e9);
  }
  SECTION("more workers than one launcher starts") {
    auto e = resolve_error({{"parallel-workers", "99999999999"}});
    CHECK_THAT(e.what(), Equals("--parallel-workers must be at most 1024, got 99999999999"));
    CHECK_THAT(e.hint(), Equals("spread a larger job over several launchers (--world-size, --node-ids)"));
    CHECK(resolve({{"parallel-workers", "1024"}}).parallel_workers == 1024);
  }
  SECTION("node ids past the largest") {
    auto e = resolve_error({{"parallel-workers", "2"}, {"node-ids", "9223372036854775807"}});
    CHECK_THAT(e.what(), Equals("--node-ids 9223372036854775807 gives node ids up to 9223372036854775808, "
                                "above 9007199254740991 (2^53-1, the largest node id)"));
    CHECK_THAT(resolve_error({{"parallel-workers", "2"}, {"node-ids", "5,9007199254740992"}}).what(),
               Contains("gives node ids up to 9007199254740992, above 9007199254740991"));
    CHECK(resolve({{"parallel-workers", "2"}, {"node-ids", "9007199254740990"}}).node_ids ==
          std::vector<std::int64_t>{9007199254740990});
  }
  SECTION("not a flag value") {
    const auto e = resolve_error({{"auto-recover", "maybe"}});
    CHECK_THAT(e.what(), Equals("--auto-recover expects true or false, got 'maybe'"));
    CHECK_THAT(e.hint(), Equals("a flag takes true or false, 1 or 0, yes or no, on or off"));
  }
  SECTION("ports count does not match the workers") {
    auto e = resolve_error({{"parallel-workers", "3"}, {"ports", "7000,7001"}});
    CHECK_THAT(e.what(), Equals("--ports has 2 ports for 3 workers"));
    CHECK_THAT(e.hint(), Contains("one base port"));
  }
  SECTION("port out of range") {
    CHECK_THAT(resolve_error({{"ports", "70000"}}).what(),
               Equals("--ports value 70000 is not a port (1-65535)"));
    CHECK_THAT(resolve_error({{"ports", "0"}}).what(),
               Equals("--ports value 0 is not a port (1-65535)"));
    CHECK_THAT(resolve_error({{"ports", "-5"}}).what(),
               Equals("--ports value -5 is not a port (1-65535)"));
  }
  SECTION("duplicate node ids") {
    auto e = resolve_error({{"parallel-workers", "3"}, {"node-ids", "1,2,1"}});
    CHECK_THAT(e.what(), Equals("--node-ids lists node id 1 twice"));
    CHECK_THAT(e.hint(), Equals("node ids must be unique"));
  }
  SECTION("node ids count does not match the workers") {
    auto e = resolve_error({{"parallel-workers", "3"}, {"node-ids", "1,2"}});
    CHECK_THAT(e.what(), Equals("--node-ids has 2 ids for 3 workers"));
    CHECK_THAT(e.hint(), Contains("one base id"));
  }
  SECTION("negative node id") {
    CHECK_THAT(resolve_error({{"node-ids", "-3"}}).what(),
               Equals("--node-ids value -3 is negative"));
  }
  SECTION("unknown topology lists the choices") {
    auto e = resolve_error({{"topology", "ring"}});
    CHECK_THAT(e.what(), Equals("unknown --topology 'ring'"));
    CHECK_THAT(e.hint(), Equals("valid choices: mesh, star, alone"));
  }
  SECTION("unknown topology with a guess") {
    auto e = resolve_error({{"topology", "mseh"}});
    CHECK_THAT(e.what(), Equals("unknown --topology 'mseh'"));
    CHECK_THAT(e.hint(), Equals("did you mean 'mesh'? valid choices: mesh, star, alone"));
  }
  SECTION("unknown protocol") {
    auto e = resolve_error({{"protocol", "quic"}});
    CHECK_THAT(e.what(), Equals("unknown --protocol 'quic'"));
    CHECK_THAT(e.hint(), Contains("valid choices: tcp, ipc"));
    CHECK_THAT(resolve_error({{"protocol", "tcpp"}}).hint(), StartsWith("did you mean 'tcp'?"));
  }
  SECTION("unknown platform") {
    auto e = resolve_error({{"platform", "foo"}});
    CHECK_THAT(e.what(), Equals("unknown --platform 'foo'"));
    CHECK_THAT(e.hint(), Contains("valid choices: slurm, k8s"));
    CHECK_THAT(resolve_error({{"platform", "slrum"}}).hint(), StartsWith("did you mean 'slurm'?"));
  }
  SECTION("a known platform outside it: the variable that is missing") {
    auto e = resolve_error({{"platform", "slurm"}});
    CHECK_THAT(e.what(), Equals("--platform slurm: SLURM_PROCID is not set"));
    CHECK_THAT(e.hint(), Contains("srun"));
    CHECK_THAT(resolve_error({{"platform", "k8s"}}).what(),
               StartsWith("--platform k8s: neither DI_NODES and DI_RANK (DI-orchestrator) nor JOB_COMPLETION_INDEX"));
  }
  SECTION("unknown mq-type") {
    auto e = resolve_error({{"mq-type", "zmq"}});
    CHECK_THAT(e.what(), Equals("unknown --mq-type 'zmq'"));
    CHECK_THAT(e.hint(), Contains("valid choices: nng, redis"));
  }
  SECTION("bad Redis addresses and logins") {
    CHECK_THAT(resolve_error({{"redis-url", "http://h:1"}}).what(),
               Equals("--redis-url must start with redis:// (rediss:// and unix sockets are not supported)"));
    CHECK_THAT(resolve_error({{"redis-url", "http://h:1"}}).hint(), Contains("redis://[[user]:password@]host[:port][/db]"));
    CHECK_THAT(resolve_error({{"redis-url", "redis://h:99999"}}).what(),
               Equals("--redis-url port '99999' is not a number from 1 to 65535"));
    CHECK_THAT(resolve_error({{"redis-url", "redis://h:6379/x"}}).what(),
               Equals("--redis-url database 'x' is not a number from 0 to 1048576"));
    CHECK_THAT(resolve_error({{"redis-url", "redis://:secret@:6379"}}).what(), Equals("--redis-url names no host"));
    CHECK_THAT(resolve_error({{"redis-url", "redis://[::1:6379"}}).what(),
               Equals("--redis-url has an unclosed '[' in its host"));
    CHECK_THAT(resolve_error({{"redis-url", "redis://h"}, {"redis-port", "1"}}).what(),
               Equals("--redis-url and --redis-port both say where Redis is"));
    CHECK_THAT(resolve_error({{"redis-port", "0"}}).what(), Equals("--redis-port '0' is not a number from 1 to 65535"));
    CHECK_THAT(resolve_error({{"redis-db", "-1"}}).what(), Equals("--redis-db '-1' is not a number from 0 to 1048576"));
    CHECK_THAT(resolve_error({{"redis-host", ""}}).what(), Equals("--redis-host must not be empty"));
    // A password is never shown, not even in a malformed URL's message.
    CHECK_THAT(resolve_error({{"redis-url", "redis://u:hunter2@h:bad"}}).what(), !Contains("hunter2"));
  }
  SECTION("unknown log level") {
    auto e = resolve_error({{"log-level", "verbose"}});
    CHECK_THAT(e.what(), Equals("unknown --log-level 'verbose'"));
    CHECK_THAT(e.hint(), Contains("valid choices: error, warn, info, debug, trace"));
    CHECK_THAT(resolve_error({{"log-level", "debg"}}).hint(), StartsWith("did you mean 'debug'?"));
  }
  SECTION("malformed platform spec") {
    auto e = resolve_error({{"platform-spec", "{tasks: ["}});
    CHECK_THAT(e.what(), StartsWith("--platform-spec is not valid JSON: "));
    CHECK_THAT(e.hint(), Contains(".json file"));
    CHECK_THAT(resolve_error({{"platform-spec", "[1, 2]"}}).what(),
               Equals("--platform-spec must be a JSON object with a 'tasks' array"));
    CHECK_THAT(resolve_error({{"platform-spec", R"({"tasks": 3})"}}).what(),
               Equals("--platform-spec must be a JSON object with a 'tasks' array"));
  }
  SECTION("platform spec file") {
    TempDir dir;
    // Valid, but it only means something with --platform: not ignored silently.
    auto e = resolve_error({{"platform-spec", dir.write("spec.json", R"({"tasks": []})")}});
    CHECK_THAT(e.what(), Equals("--platform-spec needs --platform (slurm or k8s)"));
    CHECK_THAT(e.hint(), Equals("without a platform, give the settings as flags"));
    CHECK_THAT(resolve_error({{"host-pattern", "job-{index}.svc"}}).what(),
               Equals("--host-pattern needs --platform k8s"));
    const std::string bad = dir.write("bad.json", "{");
    CHECK_THAT(resolve_error({{"platform-spec", bad}}).what(),
               StartsWith("--platform-spec is not valid JSON: "));
    const std::string missing = dir.file("missing.json");
    CHECK_THAT(resolve_error({{"platform-spec", missing}}).what(),
               Equals("cannot read --platform-spec file '" + missing + "'"));
  }
  SECTION("bad attach-to address") {
    CHECK_THAT(resolve_error({{"attach-to", "10.0.0.1:5000"}}).what(),
               Equals("--attach-to address '10.0.0.1:5000' is not tcp://host:port or ipc:///path"));
    CHECK_THAT(resolve_error({{"attach-to", "tcp://10.0.0.1:5000,tcp://nohost"}}).what(),
               Equals("--attach-to address 'tcp://nohost' is not tcp://host:port or ipc:///path"));
    CHECK_THAT(resolve_error({{"attach-to", "ipc://"}}).what(), Contains("'ipc://'"));
    // What a worker's mesh would refuse is refused here, before any worker starts.
    const std::pair<const char*, const char*> refused[] = {
        {"tcp://127.0.0.1:0", "bad port '0'"},
        {"tcp://127.0.0.1:99999", "bad port '99999'"},
        {"tcp://:5", "no host"},
        {"ipc://relative/path", "the ipc path must be absolute"},
    };
    for (const auto& [url, why] : refused) {
      CAPTURE(url);
      auto e = resolve_error({{"attach-to", url}});
      CHECK_THAT(e.what(), Equals(std::string("--attach-to address '") + url + "': " + why));
      CHECK_THAT(e.hint(), Equals("use tcp://host:port or ipc:///absolute/path"));
    }
  }
  SECTION("negative seconds") {
    CHECK_THAT(resolve_error({{"grace-period", "-1"}}).what(),
               Equals("--grace-period must be at least 0, got -1"));
    CHECK_THAT(resolve_error({{"startup-interval", "-0.5"}}).what(),
               StartsWith("--startup-interval must be at least 0, got -0.5"));
    CHECK_THAT(resolve_error({{"max-retries", "-1"}}).what(),
               Equals("--max-retries must be at least 0, got -1"));
  }
  SECTION("world size smaller than the workers") {
    auto e = resolve_error({{"parallel-workers", "4"}, {"world-size", "2"}});
    CHECK_THAT(e.what(), Equals("--world-size 2 is smaller than --parallel-workers 4"));
  }
  SECTION("empty address") {
    CHECK_THAT(resolve_error({{"address", ""}}).what(), Equals("--address must not be empty"));
  }
  SECTION("errors from the environment name the option too") {
    auto e = error_of([] {
      resolve_options({{"package", "x"}}, {{"DITASK_LAUNCH_PARALLEL_WORKERS", "0"}});
    });
    CHECK_THAT(e.what(), Equals("--parallel-workers must be at least 1, got 0"));
  }
}

TEST_CASE("launcher options: a base port whose workers would run past 65535 is refused",
          "[launcher][options]") {
  // Worker i listens on base+i: 65535 leaves no room for a second worker. Refused either when
  // resolving or when planning; never planned as port 65536 (which getaddrinfo takes as port 0).
  auto e = error_of([] {
    const Options o = resolve({{"parallel-workers", "2"}, {"ports", "65535"}});
    ditask::launcher::plan_layout(o, "r");
  });
  CHECK_THAT(e.what(), Contains("--ports") && Contains("65535"));
}

// --- mesh settings ---------------------------------------------------------------------------
