// SPDX-License-Identifier: MIT
// The launcher's mesh options (--protocol, ports, byte limits, timeouts, the run id, the token,
// --mq-type redis): defaults, precedence and usage errors.
#include "ditask/launcher/options.hpp"

#include <map>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "options_support.hpp"

#include "ditask/error.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using ditask::launcher::Options;
using ditask::launcher::resolve_options;
using ditask::launcher::Source;

using ditask::test::error_of;
using ditask::test::TempDir;
using namespace ditask::test::options_support;

TEST_CASE("launcher mesh option defaults", "[launcher][options][mesh]") {
  const Options o = resolve({});
  CHECK(o.startup_timeout == 60.0);
  CHECK(o.max_frame_bytes == 268435456);
  CHECK(o.send_queue_bytes == 8388608);
  CHECK(o.send_timeout == 30.0);
  CHECK(o.send_policy == "wait");
  CHECK_FALSE(o.relay);
  CHECK(o.token.empty());
  CHECK(o.values.at("token").empty());
  CHECK(o.values.at("max-frame-bytes") == "256M");
  CHECK(o.values.at("send-queue-bytes") == "8M");
  CHECK(o.origins.at("startup-timeout") == Source::default_value);
  CHECK(o.origins.at("token") == Source::default_value);
}

TEST_CASE("launcher mesh options precedence: command line > environment > config",
          "[launcher][options][mesh]") {
  TempDir dir;
  const std::string config = dir.write("job.json", R"({
    "package": "greeting", "startup_timeout": 5, "send-timeout": 7, "max-frame-bytes": "1M",
    "send_queue_bytes": 131072, "send-policy": "drop", "relay": true, "topology": "star"
  })");
  const Env env = {{"DITASK_LAUNCH_SEND_TIMEOUT", "8"},
                   {"DITASK_LAUNCH_MAX_FRAME_BYTES", "2M"},
                   {"DITASK_LAUNCH_SEND_POLICY", "wait"}};
  const Options o =
      resolve_options({{"config", config}, {"max-frame-bytes", "3M"}, {"relay", "false"}}, env);
  CHECK(o.max_frame_bytes == 3 << 20);
  CHECK(o.origins.at("max-frame-bytes") == Source::command_line);
  CHECK(o.values.at("max-frame-bytes") == "3M");
  CHECK_FALSE(o.relay);
  CHECK(o.origins.at("relay") == Source::command_line);
  CHECK(o.send_timeout == 8.0);
  CHECK(o.origins.at("send-timeout") == Source::environment);
  CHECK(o.send_policy == "wait");
  CHECK(o.origins.at("send-policy") == Source::environment);
  CHECK(o.startup_timeout == 5.0);
  CHECK(o.origins.at("startup-timeout") == Source::config);
  CHECK(o.send_queue_bytes == 131072);
  CHECK(o.origins.at("send-queue-bytes") == Source::config);

  const Options from_config = resolve_options({{"config", config}}, {});
  CHECK(from_config.relay);
  CHECK(from_config.send_policy == "drop");
  CHECK(from_config.max_frame_bytes == 1 << 20);
}

TEST_CASE("byte counts take a binary K, M or G suffix", "[launcher][options][mesh]") {
  auto frame = [](const std::string& text) {
    return resolve({{"max-frame-bytes", text}}).max_frame_bytes;
  };
  CHECK(frame("1024") == 1024);
  CHECK(frame("1K") == 1024);
  CHECK(frame("1k") == 1024);
  CHECK(frame("64K") == 65536);
  CHECK(frame("256M") == 268435456);
  CHECK(frame("3m") == 3145728);
  CHECK(frame("1G") == 1073741824);
  CHECK(frame("3g") == 3221225472);
  CHECK(frame("4194303K") == 4294966272);
  CHECK(frame("4294967295") == 4294967295);  // 4G-1, the largest
  auto queue = [](const std::string& text) {
    return resolve({{"send-queue-bytes", text}}).send_queue_bytes;
  };
  CHECK(queue("64K") == 65536);
  CHECK(queue("65536") == 65536);
  CHECK(queue("8G") == std::int64_t{8} << 30);
}

TEST_CASE("launcher mesh options: usage errors", "[launcher][options][mesh]") {
  const std::string bytes_hint = "e.g. 1048576, 64K, 256M or 1G (K, M and G are binary: 1K = 1024)";
  SECTION("startup and send timeouts must be positive numbers") {
    auto e = resolve_error({{"startup-timeout", "0"}});
    CHECK_THAT(e.what(), Equals("--startup-timeout must be more than 0, got 0"));
    CHECK_THAT(e.hint(), Equals("give a number of seconds, e.g. --startup-timeout 2.5"));
    CHECK_THAT(resolve_error({{"send-timeout", "-1"}}).what(),
               Equals("--send-timeout must be more than 0, got -1"));
    e = resolve_error({{"startup-timeout", "abc"}});
    CHECK_THAT(e.what(), Equals("--startup-timeout expects a number of seconds, got 'abc'"));
    CHECK_THAT(e.hint(), Equals("fractions are allowed, e.g. --startup-timeout 2.5"));
    CHECK_THAT(resolve_error({{"send-timeout", "inf"}}).what(),
               Equals("--send-timeout expects a number of seconds, got 'inf'"));
    CHECK(resolve({{"startup-timeout", "0.25"}}).startup_timeout == 0.25);
  }
  SECTION("a malformed byte count") {
    for (const char* bad : {"5X", "K", "", "1.5M", "64 K", "-5", "+5", "12KB", "0x10"}) {
      CAPTURE(bad);
      auto e = resolve_error({{"max-frame-bytes", bad}});
      CHECK_THAT(e.what(),
                 Equals(std::string("--max-frame-bytes expects a byte count (an integer with an "
                                    "optional K, M or G), got '") +
                        bad + "'"));
      CHECK_THAT(e.hint(), Equals(bytes_hint));
    }
    CHECK_THAT(resolve_error({{"send-queue-bytes", "lots"}}).what(),
               StartsWith("--send-queue-bytes expects a byte count"));
  }
  SECTION("a byte count too large for 64 bits") {
    CHECK_THAT(resolve_error({{"send-queue-bytes", "99999999999G"}}).what(),
               Equals("--send-queue-bytes '99999999999G' is too large"));
    CHECK_THAT(resolve_error({{"send-queue-bytes", "99999999999999999999"}}).what(),
               Equals("--send-queue-bytes '99999999999999999999' is too large"));
  }
  SECTION("max-frame-bytes is 1024 to 4G-1") {
    auto e = resolve_error({{"max-frame-bytes", "12"}});
    CHECK_THAT(e.what(), Equals("--max-frame-bytes must be at least 1024 bytes (1K), got 12"));
    CHECK_THAT(e.hint(), Equals(bytes_hint));
    CHECK_THAT(resolve_error({{"max-frame-bytes", "1023"}}).what(), Contains("at least 1024"));
    e = resolve_error({{"max-frame-bytes", "4G"}});
    CHECK_THAT(e.what(),
               Equals("--max-frame-bytes must be at most 4294967295 bytes (4G-1), got 4G"));
    CHECK_THAT(e.hint(), Contains("32-bit"));
  }
  SECTION("send-queue-bytes is at least 64K") {
    auto e = resolve_error({{"send-queue-bytes", "1K"}});
    CHECK_THAT(e.what(), Equals("--send-queue-bytes must be at least 65536 bytes (64K), got 1K"));
    CHECK_THAT(e.hint(), Equals(bytes_hint));
    CHECK_THAT(resolve_error({{"send-queue-bytes", "65535"}}).what(), Contains("at least 65536"));
  }
  SECTION("unknown send policy") {
    auto e = resolve_error({{"send-policy", "sometimes"}});
    CHECK_THAT(e.what(), Equals("unknown --send-policy 'sometimes'"));
    CHECK_THAT(e.hint(), Equals("valid choices: wait, drop"));
    CHECK_THAT(resolve_error({{"send-policy", "drp"}}).hint(),
               Equals("did you mean 'drop'? valid choices: wait, drop"));
  }
  SECTION("relay needs a star") {
    auto e = resolve_error({{"relay", "true"}});
    CHECK_THAT(e.what(), Equals("--relay needs --topology star, got --topology mesh"));
    CHECK_FALSE(e.hint().empty());
    CHECK_THAT(resolve_error({{"relay", "true"}, {"topology", "alone"}}).what(),
               Equals("--relay needs --topology star, got --topology alone"));
    CHECK_THAT(resolve_error({{"relay", "often"}}).what(),
               Equals("--relay expects true or false, got 'often'"));
    CHECK(resolve({{"relay", "true"}, {"topology", "star"}}).relay);
    CHECK_FALSE(resolve({{"relay", "false"}}).relay);  // off is fine with any topology
  }
  SECTION("errors from DITASK_LAUNCH_* name the option") {
    auto e = error_of([] {
      resolve_options({{"package", "x"}}, {{"DITASK_LAUNCH_SEND_QUEUE_BYTES", "1K"}});
    });
    CHECK_THAT(e.what(), Equals("--send-queue-bytes must be at least 65536 bytes (64K), got 1K"));
  }
}

TEST_CASE("the run id: --run-id, else DITASK_RUN_ID, else fresh", "[launcher][options][mesh]") {
  SECTION("fresh: not explicit") {
    const Options o = resolve({});
    CHECK_FALSE(o.run_id_explicit);
    CHECK(std::regex_match(o.run_id, std::regex("[0-9]{8}T[0-9]{6}-[0-9a-f]{6}")));
    CHECK(o.origins.at("run-id") == Source::default_value);
    CHECK(o.values.at("run-id") == o.run_id);  // --dry-run shows the id it made
  }
  SECTION("the launcher's inherited DITASK_RUN_ID: explicit") {
    const Options o = resolve({}, {{"DITASK_RUN_ID", "job-42"}});
    CHECK(o.run_id == "job-42");
    CHECK(o.run_id_explicit);
    CHECK(o.origins.at("run-id") == Source::environment);
    CHECK(o.values.at("run-id") == "job-42");
  }
  SECTION("an empty DITASK_RUN_ID counts as unset") {
    const Options o = resolve({}, {{"DITASK_RUN_ID", ""}});
    CHECK_FALSE(o.run_id_explicit);
    CHECK_FALSE(o.run_id.empty());
  }
  SECTION("--run-id beats DITASK_LAUNCH_RUN_ID, which beats config, which beats DITASK_RUN_ID") {
    TempDir dir;
    const std::string config =
        dir.write("job.json", R"({"package": "x", "run_id": "from-config"})");
    const Env env = {{"DITASK_RUN_ID", "inherited"}, {"DITASK_LAUNCH_RUN_ID", "from-env"}};
    CHECK(resolve_options({{"config", config}, {"run-id", "cli.1:a_b-C"}}, env).run_id ==
          "cli.1:a_b-C");
    CHECK(resolve_options({{"config", config}}, env).run_id == "from-env");
    const Options o = resolve_options({{"config", config}}, {{"DITASK_RUN_ID", "inherited"}});
    CHECK(o.run_id == "from-config");
    CHECK(o.run_id_explicit);
    CHECK(o.origins.at("run-id") == Source::config);
  }
  SECTION("bad run ids") {
    const std::string hint =
        "the run id names folders: use letters, digits and . _ : - (at most 128)";
    auto e = resolve_error({{"run-id", "bad id!"}});
    CHECK_THAT(e.what(), Equals("--run-id 'bad id!' may only use A-Z a-z 0-9 . _ : -"));
    CHECK_THAT(e.hint(), Equals(hint));
    CHECK_THAT(resolve_error({{"run-id", "a/b"}}).what(), Contains("may only use"));
    CHECK_THAT(resolve_error({{"run-id", ""}}).what(),
               Equals("--run-id must have 1 to 128 characters, got 0"));
    CHECK_THAT(resolve_error({{"run-id", std::string(129, 'a')}}).what(),
               Equals("--run-id must have 1 to 128 characters, got 129"));
    CHECK(resolve({{"run-id", std::string(128, 'a')}}).run_id.size() == 128);
    CHECK_THAT(resolve_error({{"run-id", ".."}}).what(),
               Equals("--run-id '..' names no folder of its own"));
    CHECK_THAT(resolve_error({{"run-id", "."}}).what(), Contains("names no folder"));
  }
  SECTION("a bad inherited DITASK_RUN_ID names the variable") {
    auto e = error_of([] { resolve({}, {{"DITASK_RUN_ID", "x y"}}); });
    CHECK_THAT(e.what(), Equals("DITASK_RUN_ID 'x y' may only use A-Z a-z 0-9 . _ : -"));
    CHECK_THAT(e.hint(), Equals("unset DITASK_RUN_ID, or give a valid --run-id"));
    // A valid --run-id makes the inherited one irrelevant.
    CHECK(resolve({{"run-id", "ok"}}, {{"DITASK_RUN_ID", "x y"}}).run_id == "ok");
  }
}

TEST_CASE("the token: --token, else DITASK_TOKEN, and never shown", "[launcher][options][mesh]") {
  const std::string secret = "s3cret-0123456789abcdef";
  SECTION("from DITASK_TOKEN") {
    const Options o = resolve({}, {{"DITASK_TOKEN", secret}});
    CHECK(o.token == secret);
    CHECK(o.origins.at("token") == Source::environment);
    CHECK(o.values.at("token") == "<hidden>");
  }
  SECTION("the command line beats DITASK_LAUNCH_TOKEN, which beats DITASK_TOKEN") {
    const Env env = {{"DITASK_TOKEN", "inherited-0123456789"}, {"DITASK_LAUNCH_TOKEN", secret}};
    CHECK(resolve({}, env).token == secret);
    const Options o = resolve({{"token", "cli-0123456789abcdef"}}, env);
    CHECK(o.token == "cli-0123456789abcdef");
    CHECK(o.origins.at("token") == Source::command_line);
    CHECK(o.values.at("token") == "<hidden>");
  }
  SECTION("from a config file, which beats DITASK_TOKEN") {
    TempDir dir;
    const std::string config =
        dir.write("job.json", R"({"package": "x", "token": ")" + secret + "\"}");
    const Options o = resolve_options({{"config", config}}, {{"DITASK_TOKEN", "inherited"}});
    CHECK(o.token == secret);
    CHECK(o.origins.at("token") == Source::config);
  }
  SECTION("empty means none") {
    const Options o = resolve({{"token", ""}}, {{"DITASK_TOKEN", secret}});
    CHECK(o.token.empty());
    CHECK(o.values.at("token").empty());
  }
  SECTION("a config token that is not a string is refused without showing it") {
    TempDir dir;
    const std::string config = dir.write("job.json", R"({"package": "x", "token": {"k": 4242}})");
    auto e = error_of([&] { resolve_options({{"config", config}}, {}); });
    CHECK_THAT(e.what(), Equals("config key 'token' must be a string"));
    CHECK_THAT(std::string(e.what()) + e.hint(), !Contains("4242"));
  }
  SECTION("a token that is not UTF-8 is refused without showing it") {
    auto e = resolve_error({{"token", "\xff\xfe-secret"}});
    CHECK_THAT(e.what(), Equals("--token is not valid UTF-8 text"));
    CHECK_THAT(std::string(e.what()) + e.hint(), !Contains("secret"));
  }
}

TEST_CASE("option warnings: a short token", "[launcher][options][mesh]") {
  using ditask::launcher::option_warnings;
  CHECK(option_warnings(resolve({})).empty());
  CHECK(option_warnings(resolve({{"token", "0123456789abcdef"}})).empty());
  CHECK(option_warnings(resolve({{"token", "short"}})) ==
        std::vector<std::string>{"--token is shorter than 16 bytes"});
}

TEST_CASE("launcher: --mq-type redis: --redis-url, --redis-host/port/db/password and $DITASK_REDIS_PASSWORD",
          "[launcher][options][redis]") {
  const Options plain = resolve({{"mq-type", "redis"}});
  CHECK(plain.mq_type == "redis");
  CHECK(plain.redis.host == "127.0.0.1");
  CHECK(plain.redis.port == 6379);
  CHECK(plain.redis.db == 0);
  CHECK(plain.redis.password.empty());
  const Options parts = resolve({{"mq-type", "redis"}, {"redis-host", "cache"}, {"redis-port", "7000"},
                                 {"redis-db", "3"}, {"redis-password", "pw"}});
  CHECK(parts.redis.host == "cache");
  CHECK(parts.redis.port == 7000);
  CHECK(parts.redis.db == 3);
  CHECK(parts.redis.password == "pw");
  CHECK(parts.values.at("redis-password") == "<hidden>");
  const Options url = resolve({{"mq-type", "redis"}, {"redis-url", "redis://alice:s3cret@10.0.0.5:6380/2"}});
  CHECK(url.redis.user == "alice");
  CHECK(url.redis.password == "s3cret");
  CHECK(url.redis.host == "10.0.0.5");
  CHECK(url.redis.port == 6380);
  CHECK(url.redis.db == 2);
  CHECK(url.values.at("redis-url") == "redis://alice:<hidden>@10.0.0.5:6380/2");
  const Options bare = resolve({{"redis-url", "redis://secret@h"}});
  CHECK(bare.redis.user.empty());
  CHECK(bare.redis.password == "secret");
  CHECK(bare.redis.port == 6379);
  const Options v6 = resolve({{"redis-url", "redis://[::1]:6390"}});
  CHECK(v6.redis.host == "::1");
  CHECK(v6.redis.port == 6390);
  const Options inherited = resolve({{"mq-type", "redis"}}, {{"DITASK_REDIS_PASSWORD", "from-env"}});
  CHECK(inherited.redis.password == "from-env");
  CHECK(inherited.origins.at("redis-password") == Source::environment);
}
