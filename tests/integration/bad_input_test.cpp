// SPDX-License-Identifier: MIT
// Bad input: each usage or config error exits 2 with `ditask: error:` (and a hint where one
// helps) before any worker starts.
#include <filesystem>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "skip.hpp"

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// Runs ditask with `args`; it must fail with exit code 2, print `error` (and `hint` unless
/// empty) in the `ditask: error:` format, and start no worker.
RunResult expect_usage_error(const std::vector<std::string>& args, const std::string& error,
                             const std::string& hint = {}, const Env& env = {}) {
  auto r = run_ditask(args, 20s, env);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, StartsWith("ditask: error: "));
  CHECK_THAT(r.err, Contains("ditask: error: " + error));
  if (!hint.empty()) {
    CHECK_THAT(r.err, Contains("ditask: hint: " + hint));
  }
  // No worker ran: workers' lines would be tagged "[node N]" on stdout or stderr.
  CHECK(r.out.empty());
  CHECK_THAT(r.err, !Contains("[node "));
  return r;
}

std::string greeting() { return module_path("greeting"); }

}  // namespace

// --- the package ---------------------------------------------------------------------------

TEST_CASE("bad input: missing --package", "[integration][bad-input]") {
  expect_usage_error({"--parallel-workers", "2"}, "missing --package", "run: ditask --package");
}

TEST_CASE("bad input: a package path that does not exist", "[integration][bad-input]") {
  expect_usage_error({"--package", "/nonexistent/libx.so"},
                     "cannot find package '/nonexistent/libx.so'", "no such file: check the path");
}

TEST_CASE("bad input: a bare package name found nowhere", "[integration][bad-input]") {
  auto r = run_ditask({"--package", "no_such_module_xyz"}, 20s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, StartsWith("ditask: error: cannot find package 'no_such_module_xyz'"));
  CHECK_THAT(r.err, Contains("ditask: hint: looked for"));
  CHECK(r.out.empty());
}

TEST_CASE("bad input: an unreadable package", "[integration][bad-input]") {
  if (::geteuid() == 0) {
    WARN("skipped: running as root, where chmod 000 does not stop reading the file");
    return;
  }
  TempDir dir;
  const std::string copy = dir.file("libgreeting.so");
  std::filesystem::copy_file(greeting(), copy);
  REQUIRE(::chmod(copy.c_str(), 0) == 0);
  expect_usage_error({"--package", copy}, "cannot read '" + copy + "': Permission denied",
                     "check the file's permissions");
}

TEST_CASE("bad input: a text file as the package", "[integration][bad-input]") {
  TempDir dir;
  const std::string text = dir.write("libnotes.so", "just some notes\n");
  expect_usage_error({"--package", text}, "'" + text + "' is not a shared library",
                     "a module is a shared library built with ditask_add_module()");
}

TEST_CASE("bad input: a folder as the package", "[integration][bad-input]") {
  TempDir dir;
  expect_usage_error({"--package", dir.path()}, "'" + dir.path() + "' is not a shared library",
                     "it is a directory");
}

TEST_CASE("bad input: a missing entry with a close match: did you mean",
          "[integration][bad-input]") {
  const std::string faults = module_path("faults");
  expect_usage_error({"--package", faults, "--main", "sgev"},
                     "cannot find entry 'sgev' in '" + faults + "'", "did you mean 'segv'?");
}

TEST_CASE("bad input: a missing entry with no close match lists the exported entries",
          "[integration][bad-input]") {
  const std::string faults = module_path("faults");
  auto r = expect_usage_error({"--package", faults, "--main", "completely_unknown"},
                              "cannot find entry 'completely_unknown' in '" + faults + "'",
                              "it exports: ");
  CHECK_THAT(r.err,
             Contains("segv") && Contains("noop") && Contains("throw_error") && Contains("hang"));
}

TEST_CASE("bad input: a module built for another ABI", "[integration][bad-input]") {
  const std::string path = module_path("abi_mismatch");
  expect_usage_error({"--package", path},
                     "'" + path + "' was built for ditask ABI 999, this runtime speaks ",
                     "rebuild the module against this ditask's headers");
}

TEST_CASE("bad input: an entry exported by hand without its ABI symbol", "[integration][bad-input]") {
  const std::string path = module_path("abi_mismatch");
  expect_usage_error({"--package", path, "--main", "by_hand"},
                     "'" + path + "' exports ditask_entry_by_hand but not ditask_entry_abi_by_hand, "
                     "the ditask ABI version it was built for",
                     "define the entry with DITASK_MAIN(by_hand) from <ditask/ditask.hpp>");
}

TEST_CASE("bad input: a module whose dependency is missing shows the dlopen error",
          "[integration][bad-input]") {
  const std::string path = module_path("missing_dep");
  expect_usage_error(
      {"--package", path},
      "cannot load '" + path +
          "': libditask_missing_dep.so: cannot open shared object file: No such file or directory",
      "check the libraries it needs with 'ldd " + path + "'");
}

// --- option values ---------------------------------------------------------------------------

TEST_CASE("bad input: a Python package where ditask was built without its Python component",
          "[integration][bad-input]") {
  if (DITASK_TEST_WITH_PYTHON) {  // python/tests covers this build's Python packages
    DITASK_SKIP("this build has the Python component (the error is for builds without it: asan, tsan)");
  }
  const std::string job = std::string(DITASK_SOURCE_DIR) + "/python/examples/greeting/greeting.py";
  auto r = run_ditask({"--package", job, "--main", "greeting.main"}, 20s, {}, {"DITASK_PYTHON"});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, StartsWith("ditask: error: '" + job +
                               "' is a Python package, and this ditask was built without its Python component\n"));
  CHECK_THAT(r.err, Contains("ditask: hint: install pybind11-dev and python3-dev and build again"));
  CHECK(r.out.empty());
}

TEST_CASE("bad input: --parallel-workers 0 or negative", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--parallel-workers", "0"},
                     "--parallel-workers must be at least 1, got 0");
  expect_usage_error({"--package", greeting(), "--parallel-workers", "-2"},
                     "--parallel-workers must be at least 1, got -2");
  expect_usage_error({"--package", greeting(), "--parallel-workers", "two"},
                     "--parallel-workers expects an integer, got 'two'");
}

TEST_CASE("bad input: --ports count does not match the workers", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--parallel-workers", "3", "--ports", "7000,7001"},
                     "--ports has 2 ports for 3 workers",
                     "give one base port (worker i gets base+i) or exactly one port per worker");
}

TEST_CASE("bad input: duplicate --node-ids", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--parallel-workers", "2", "--node-ids", "1,1"},
                     "--node-ids lists node id 1 twice", "node ids must be unique");
}

TEST_CASE("bad input: unknown --topology lists the choices", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--topology", "ring"}, "unknown --topology 'ring'",
                     "valid choices: mesh, star, alone");
}

TEST_CASE("bad input: unknown --protocol lists the choices", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--protocol", "quic"}, "unknown --protocol 'quic'",
                     "valid choices: tcp, ipc");
  expect_usage_error({"--package", greeting(), "--protocol", "udp"}, "unknown --protocol 'udp'",
                     "did you mean 'tcp'? valid choices: tcp, ipc");
}

TEST_CASE("bad input: unknown --platform lists the choices", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--platform", "foo"}, "unknown --platform 'foo'",
                     "valid choices: slurm, k8s");
}

TEST_CASE("bad input: --platform slurm outside a Slurm step names the missing variable", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--platform", "slurm"}, "--platform slurm: SLURM_PROCID is not set",
                     "run ditask as a task of srun");
}

TEST_CASE("bad input: unknown --mq-type lists the choices", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--mq-type", "zmq"}, "unknown --mq-type 'zmq'",
                     "valid choices: nng, redis");
}

TEST_CASE("bad input: a malformed --redis-url, or one beside --redis-host, exits 2", "[integration][bad-input][redis]") {
  expect_usage_error({"--package", greeting(), "--mq-type", "redis", "--redis-url", "redis://host:port"},
                     "--redis-url port 'port' is not a number from 1 to 65535",
                     "the form is redis://[[user]:password@]host[:port][/db]");
  expect_usage_error({"--package", greeting(), "--mq-type", "redis", "--redis-url", "redis://h", "--redis-host", "g"},
                     "--redis-url and --redis-host both say where Redis is", "give the whole address in --redis-url");
}

TEST_CASE("bad input: malformed --platform-spec", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--platform-spec", "{bad"},
                     "--platform-spec is not valid JSON: ", "give JSON text like");
  TempDir dir;
  const std::string spec = dir.write("spec.json", "{\"tasks\": [");
  expect_usage_error({"--package", greeting(), "--platform-spec", spec},
                     "--platform-spec is not valid JSON: ");
}

TEST_CASE("bad input: other bad values", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--attach-to", "10.0.0.1:5000"},
                     "--attach-to address '10.0.0.1:5000' is not tcp://host:port or ipc:///path");
  expect_usage_error({"--package", greeting(), "--grace-period", "-1"},
                     "--grace-period must be at least 0, got -1");
  expect_usage_error({"--package", greeting(), "--parallel-workers", "4", "--world-size", "2"},
                     "--world-size 2 is smaller than --parallel-workers 4");
}

TEST_CASE("bad input: a bad value from a DITASK_LAUNCH_ variable", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting()}, "--parallel-workers must be at least 1, got 0", "",
                     {{"DITASK_LAUNCH_PARALLEL_WORKERS", "0"}});
}

// --- mesh settings ---------------------------------------------------------------------------

TEST_CASE("bad input: --startup-timeout 0", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--startup-timeout", "0"},
                     "--startup-timeout must be more than 0, got 0",
                     "give a number of seconds, e.g. --startup-timeout 2.5");
}

TEST_CASE("bad input: --startup-timeout abc", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--startup-timeout", "abc"},
                     "--startup-timeout expects a number of seconds, got 'abc'",
                     "fractions are allowed, e.g. --startup-timeout 2.5");
}

TEST_CASE("bad input: --run-id with characters a run id may not use", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--run-id", "bad id!"},
                     "--run-id 'bad id!' may only use A-Z a-z 0-9 . _ : -",
                     "the run id names folders: use letters, digits and . _ : - (at most 128)");
}

TEST_CASE("bad input: an inherited DITASK_RUN_ID that is not a run id",
          "[integration][bad-input]") {
  expect_usage_error({"--package", greeting()}, "DITASK_RUN_ID '../x' may only use",
                     "unset DITASK_RUN_ID, or give a valid --run-id", {{"DITASK_RUN_ID", "../x"}});
}

TEST_CASE("bad input: --max-frame-bytes 12 is below 1K", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--max-frame-bytes", "12"},
                     "--max-frame-bytes must be at least 1024 bytes (1K), got 12",
                     "e.g. 1048576, 64K, 256M or 1G (K, M and G are binary: 1K = 1024)");
}

TEST_CASE("bad input: --max-frame-bytes 5X has no known suffix", "[integration][bad-input]") {
  expect_usage_error(
      {"--package", greeting(), "--max-frame-bytes", "5X"},
      "--max-frame-bytes expects a byte count (an integer with an optional K, M or G), got '5X'",
      "e.g. 1048576, 64K, 256M or 1G");
}

TEST_CASE("bad input: --send-queue-bytes 1K is below 64K", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--send-queue-bytes", "1K"},
                     "--send-queue-bytes must be at least 65536 bytes (64K), got 1K");
}

TEST_CASE("bad input: unknown --send-policy lists the choices", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--send-policy", "sometimes"},
                     "unknown --send-policy 'sometimes'", "valid choices: wait, drop");
  expect_usage_error({"--package", greeting(), "--send-policy", "drp"},
                     "unknown --send-policy 'drp'",
                     "did you mean 'drop'? valid choices: wait, drop");
}

TEST_CASE("bad input: --relay with --topology mesh", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting(), "--relay"},
                     "--relay needs --topology star, got --topology mesh",
                     "only a star has a hub to relay");
  expect_usage_error({"--package", greeting(), "--topology", "alone"},
                     "--relay needs --topology star, got --topology alone", "",
                     {{"DITASK_LAUNCH_RELAY", "true"}});
}

// --- config files ----------------------------------------------------------------------------

TEST_CASE("bad input: a malformed --config file", "[integration][bad-input]") {
  TempDir dir;
  const std::string config = dir.write("job.json", "{\"package\": \"greeting\",\n");
  expect_usage_error({"--config", config}, "config file '" + config + "' is not valid JSON: ");
}

TEST_CASE("bad input: a --config file that does not exist", "[integration][bad-input]") {
  TempDir dir;
  const std::string config = dir.file("missing.json");
  expect_usage_error({"--config", config}, "cannot read config file '" + config + "'",
                     "check the path given to --config");
}

TEST_CASE("bad input: an unknown key in a --config file", "[integration][bad-input]") {
  TempDir dir;
  const std::string config =
      dir.write("job.json", R"({"package": "greeting", "parallel_worker": 2})");
  expect_usage_error({"--config", config},
                     "unknown key 'parallel_worker' in config file '" + config + "'",
                     "did you mean 'parallel-workers'?");
}

// --- the command line ------------------------------------------------------------------------

TEST_CASE("bad input: an unknown flag goes through the ditask: error format with a guess",
          "[integration][bad-input]") {
  auto r = expect_usage_error(
      {"--package", greeting(), "--parallel-worker", "2"},
      "the following arguments were not expected: ", "did you mean '--parallel-workers'?");
  CHECK_THAT(r.err, Contains("--parallel-worker"));
}

TEST_CASE("bad input: an unknown flag is quoted as typed", "[integration][bad-input]") {
  // CLI11 parses a reversed argument vector; its message must still show the arguments in order.
  expect_usage_error({"--package", greeting(), "--parallel-worker", "2"},
                     "the following arguments were not expected: --parallel-worker 2");
}

TEST_CASE("bad input: a missing option value", "[integration][bad-input]") {
  expect_usage_error({"--package"}, "", "see ditask --help");
}

TEST_CASE("bad input: a port already in use is reported before any worker starts",
          "[integration][bad-input]") {
  ditask::test::PortSquatter squatter;
  const std::string port = std::to_string(squatter.port);
  expect_usage_error({"--package", greeting(), "--ports", port},
                     "cannot listen on tcp://127.0.0.1:" + port + ": Address already in use",
                     "another process uses this port: pick other --ports, or leave --ports out");
  // One port per worker, the taken one second: the first must not start either.
  auto r = expect_usage_error({"--package", greeting(), "--parallel-workers", "2", "--ports",
                               std::to_string(squatter.port - 1) + "," + port},
                              "cannot listen on tcp://127.0.0.1:");
  CHECK_THAT(r.err, Contains(": Address already in use"));
}

// --- help and version ------------------------------------------------------------------------

TEST_CASE("bad input: --help and --version exit 0", "[integration][bad-input]") {
  auto help = run_ditask({"--help"}, 20s);
  INFO(describe(help));
  CHECK(help.exit_code == 0);
  CHECK(help.err.empty());
  CHECK_THAT(help.out,
             Contains("--parallel-workers") && Contains("--package") && Contains("Exit codes"));
  // Every exit code docs/cli.md names, 4 included.
  CHECK_THAT(help.out, Contains("2 usage or config error, 3 internal error, 4 the\nlaunchers could not meet at "
                                "--rendezvous") &&
                           Contains("124 when --timeout fired"));
  // The negated flag is shown without CLI11's "{false}" glued to it; the probe mode is named;
  // a bare package name goes to the loader only with ".so" in it, as docs/cli.md says.
  CHECK_THAT(help.out, Contains("--tag-output,--no-tag-output") && !Contains("{false}"));
  CHECK_THAT(help.out, Contains("ditask --probe <library path> <entry>"));
  CHECK_THAT(help.out, Contains("then, for a name with .so, on the loader's search path"));
  CHECK_THAT(help.out, Contains("\nMesh:\n") && Contains("--max-frame-bytes BYTES") &&
                           Contains("--send-policy {wait,drop}") && Contains("--token TEXT") &&
                           Contains("--labels LIST") && Contains("--attach-to LIST"));

  auto version = run_ditask({"--version"}, 20s);
  INFO(describe(version));
  CHECK(version.exit_code == 0);
  CHECK(version.err.empty());
  CHECK_THAT(version.out, StartsWith("ditask, version "));

  auto short_version = run_ditask({"-v"}, 20s);
  CHECK(short_version.exit_code == 0);
  CHECK(short_version.out == version.out);
}

TEST_CASE("bad input: --protocol ipc with a TMPDIR that is not a usable folder", "[integration][bad-input]") {
  // The socket folder goes under TMPDIR: a user's setting, so exit 2 with a hint, not an
  // internal error (exit 3).
  expect_usage_error({"--package", greeting(), "--protocol", "ipc"},
                     "cannot make the ipc socket folder under TMPDIR='/nonexistent/ditask-tmp': ",
                     "set TMPDIR to a writable folder, or use --protocol tcp", {{"TMPDIR", "/nonexistent/ditask-tmp"}});
  expect_usage_error({"--package", greeting(), "--protocol", "ipc"}, "cannot make the ipc socket folder under TMPDIR='/proc': ",
                     "set TMPDIR to a writable folder, or use --protocol tcp", {{"TMPDIR", "/proc"}});
}

TEST_CASE("bad input: a DITASK_LAUNCH_ variable that names no option", "[integration][bad-input]") {
  expect_usage_error({"--package", greeting()}, "unknown environment variable DITASK_LAUNCH_PARALLEL_WORKER",
                     "did you mean DITASK_LAUNCH_PARALLEL_WORKERS?", {{"DITASK_LAUNCH_PARALLEL_WORKER", "2"}});
}

TEST_CASE("bad input: an option given twice", "[integration][bad-input]") {
  // CLI11's own text was "--labels: At Most 1 required but received 2".
  expect_usage_error({"--package", greeting(), "--labels", "a,b", "--labels", "c"}, "--labels was given 2 times",
                     "give it once; a list takes commas: --labels a,b,c");
  expect_usage_error({"--package", greeting(), "--timeout", "5", "--timeout", "6"}, "--timeout was given 2 times",
                     "give it once");
}

TEST_CASE("bad input: a flag with a value that is not true or false", "[integration][bad-input]") {
  // As from DITASK_LAUNCH_AUTO_RECOVER or --config; CLI11's own text was "could not convert: ...".
  expect_usage_error({"--package", greeting(), "--auto-recover=maybe"},
                     "--auto-recover expects true or false, got 'maybe'", "a flag takes true or false, 1 or 0, yes or no, on or off");
  // The same words for the same value from the environment (an audit found the hint missing).
  expect_usage_error({"--package", greeting()}, "--relay expects true or false, got 'maybe'", "a flag takes true or false, 1 or 0, yes or no, on or off",
                     {{"DITASK_LAUNCH_RELAY", "maybe"}});
}

TEST_CASE("bad input: an --address not of this machine fails before any warning about it", "[integration][bad-input]") {
  // 192.0.2.1 (TEST-NET-1) is bound, never contacted. The warning about an unauthenticated
  // non-loopback mesh came first, for a mesh that could not even listen.
  auto r = expect_usage_error({"--package", greeting(), "--address", "192.0.2.1"},
                              "cannot listen on tcp://192.0.2.1:0: ", "check --address: it must be an address of this machine");
  CHECK_THAT(r.err, !Contains("not a loopback address"));
}

TEST_CASE("bad input: this session's new limits and checks exit 2 before any worker starts", "[integration][bad-input]") {
  const std::string g = greeting();
  expect_usage_error({"--package", g, "--timeout", "1e10"},
                     "--timeout must be at most 1e9 seconds (about 31 years), got '1e10'", "--timeout 0 means no time limit");
  expect_usage_error({"--package", g, "--parallel-workers", "99999999999"},
                     "--parallel-workers must be at most 1024, got 99999999999",
                     "spread a larger job over several launchers (--world-size, --node-ids)");
  expect_usage_error({"--package", g, "--parallel-workers", "2", "--node-ids", "9223372036854775807"},
                     "--node-ids 9223372036854775807 gives node ids up to 9223372036854775808, above 9007199254740991");
  expect_usage_error({"--package", g, "--attach-to", "tcp://127.0.0.1:0"},
                     "--attach-to address 'tcp://127.0.0.1:0': bad port '0'", "use tcp://host:port or ipc:///absolute/path");
  expect_usage_error({"--package", g, "--platform-spec", R"({"tasks": []})"},
                     "--platform-spec needs --platform (slurm or k8s)", "without a platform, give the settings as flags");
  expect_usage_error({"--package", g, "--host-pattern", "job-{index}.svc"}, "--host-pattern needs --platform k8s");
  TempDir dir;
  const std::string nested = dir.write("nested.json", R"({"package": "greeting", "config": "x.json"})");
  expect_usage_error({"--config", nested}, "config file '" + nested + "' names another config file (key 'config')",
                     "a config file cannot include another; merge the two");
}

TEST_CASE("bad input: a --tag-format typo, a config list for a one-value option and a misaligned rendezvous rank",
          "[integration][bad-input]") {
  const std::string g = greeting();
  expect_usage_error({"--package", g, "--tag-format", "[n{nod}]"}, "--tag-format '[n{nod}]': unknown placeholder '{nod}'",
                     "did you mean '{node}'? (placeholders: {node}, {rank}, {local}, {attempt})");
  TempDir dir;
  const std::string two = dir.write("two.json", R"({"package": ["a.so", "b.so"]})");
  expect_usage_error({"--config", two}, "config key 'package' takes one value, not a list",
                     "lists are for node-ids, labels, roles, ports, attach-to");
  expect_usage_error({"--package", g, "--parallel-workers", "2", "--node-ids", "1", "--world-size", "4", "--rendezvous",
                      "tcp://127.0.0.1:1", "--run-id", "r1"},
                     "--rendezvous: --node-ids starts at 1, not at a multiple of --parallel-workers 2",
                     "launcher r of the rendezvous runs node ids r*2 .. r*2+1: give --node-ids 0 or 2");
}
