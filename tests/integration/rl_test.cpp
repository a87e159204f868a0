// SPDX-License-Identifier: MIT
// The RL examples end to end at small sizes: the CartPole REINFORCE job reaching a low threshold
// (and the same run twice with one seed giving the same episodes), a collector killed under
// --auto-recover rejoining, and the DQN role layout where each role does its part.
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;
using Catch::Matchers::Contains;

namespace {

std::vector<std::string> cartpole(int workers, std::vector<std::string> more) {
  std::vector<std::string> args = {"--package", module_path("cartpole"), "--main", "main", "--parallel-workers",
                                   std::to_string(workers)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<std::string> dqn(int workers, std::vector<std::string> more) {
  std::vector<std::string> args = {"--package", module_path("dqn"), "--parallel-workers", std::to_string(workers)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// The number after `prefix` in the first line of `text` that contains it, or -1.
double number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  return at == std::string::npos ? -1.0 : std::stod(text.substr(at + prefix.size()));
}

}  // namespace

TEST_CASE("rl: the cartpole job reaches a running reward of 50 with 3 workers, and says so", "[integration][rl]") {
  auto r = run_ditask(cartpole(3, {"--", "threshold=50"}), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[node 0] learner: 2 collectors, synchronous rounds, seed 0"));
  CHECK(std::regex_search(r.out, std::regex(R"(\[node 0\] Episode 10  Last reward \d+\.00  Average reward \d+\.\d\d\n)")));
  CHECK(std::regex_search(r.out, std::regex(R"(\[node 0\] Solved! Running reward is now 5\d\.\d\d and the last episode )"
                                            R"(runs to \d+ time steps!\n)")));
  CHECK_THAT(r.out, Contains("[node 0] learner: solved after "));
}

TEST_CASE("rl: synchronous rounds make a cartpole run reproducible for one seed and worker count", "[integration][rl]") {
  const auto episodes = [](const std::string& out) {
    std::string lines;
    for (const auto& line : lines_with(out, "] Episode ")) {
      lines += line + "\n";
    }
    return lines;
  };
  auto a = run_ditask(cartpole(3, {"--", "threshold=40", "seed=7"}), 120s);
  auto b = run_ditask(cartpole(3, {"--", "threshold=40", "seed=7"}), 120s);
  INFO(describe(a) << describe(b));
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK_FALSE(episodes(a.out).empty());
  CHECK(episodes(a.out) == episodes(b.out));
}

TEST_CASE("rl: a collector killed under --auto-recover rejoins and gets the current weights", "[integration][rl]") {
  auto r = run_ditask(cartpole(3, {"--auto-recover", "--restart-backoff", "0.05", "--roles", "learner:0,collector:1-",
                                   "--", "threshold=60", "kill_node=2", "kill_round=2"}),
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[node 2] collector 2: killing myself at round 2"));
  CHECK_THAT(r.out, Contains("[node 0] learner: collector 2 left (connection lost); going on with 1 collector"));
  CHECK(std::regex_search(r.out, std::regex(R"(\[node 0\] learner: collector 2 rejoined \(attempt 1\); sent it the )"
                                            R"(weights of round \d+)")));
  CHECK_THAT(r.out, Contains("Solved!"));
}

TEST_CASE("rl: bad cartpole module arguments fail the job with the reason", "[integration][rl]") {
  auto r = run_ditask(cartpole(2, {"--", "mode=fast"}), 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("mode must be sync or async, not 'fast'"));
  auto u = run_ditask(cartpole(2, {"--", "speed=3"}), 60s);
  CHECK(u.exit_code == 1);
  CHECK_THAT(u.err, Contains("unknown module argument 'speed' (known: gamma, kill_node"));
}

TEST_CASE("rl: dqn roles each do their part: transitions, models, an evaluator above a random policy",
          "[integration][rl][roles]") {
  auto r = run_ditask(dqn(4, {"--roles", "learner:0,evaluator:1,collector:2-", "--", "stop_value=100"}), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  // Transitions reach the learner from both collectors.
  CHECK(std::regex_search(r.out, std::regex(R"(\[node 0\] learner: done after \d+ train iterations, \d+ transitions )"
                                            R"(received from collectors 2,3\n)")));
  // Models reach every collector and the evaluator.
  for (const char* node : {"[node 1] evaluator: done; ", "[node 2] collector: done after ", "[node 3] collector: done after "}) {
    CAPTURE(node);
    const auto line = lines_with(r.out, node);
    REQUIRE(line.size() == 1);
    CHECK(number_after(line[0], "; ") >= 1);  // "...; N models received"
  }
  // The evaluator's reward rises above a random policy's.
  const double random = number_after(r.out, "[node 1] evaluator: a random policy's reward is ");
  const double reached = number_after(r.out, "[node 1] evaluator: eval reward ");
  CHECK(random > 0);
  CHECK(random < 40);
  CHECK(lines_with(r.out, "reached the stop value 100").size() == 1);
  CHECK(number_after(lines_with(r.out, "reached the stop value")[0], "eval reward ") > random);
  CHECK(reached > 0);
}

TEST_CASE("rl: dqn in one process plays every role (the one-process pipeline)", "[integration][rl]") {
  auto r = run_ditask(dqn(1, {"--", "stop_value=100"}), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[node 0] evaluator: eval reward "));
  CHECK_THAT(r.out, Contains("reached the stop value 100"));
  CHECK_THAT(r.out, Contains("[node 0] learner: done after "));
}
