// SPDX-License-Identifier: MIT
// REINFORCE on CartPole-v1 with one learner and N collectors (the README's main job):
//   ditask --package cartpole --main main --parallel-workers 4 [--roles learner:0,collector:1-]
// The learner (role learner, else node 0) broadcasts the policy's weights; each collector runs an
// episode with them and sends the trajectory back; the learner takes one Adam step on the summed
// REINFORCE loss of the round's episodes (taken in node order), keeps the tutorial's running
// reward, and ends the job (finish) once it passes the threshold. Rounds are synchronous by default,
// so a run is reproducible for a fixed seed and worker count; mode=async updates on every episode.
// Module arguments (after --): seed, threshold (475), gamma (0.99), lr (0.01), mode (sync|async),
// max_episodes (5000), kill_node and kill_round (a collector SIGKILLs itself there, attempt 0;
// the learner then declares the solve only after it rejoined).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include <ditask/ditask.hpp>

#include "adam.hpp"
#include "reinforce.hpp"
#include "shared.hpp"

namespace {

using namespace std::chrono_literals;
using rl::Bytes;

struct Settings {
  std::uint64_t seed = 0;
  double threshold = rl::CartPole::kSolvedReward;
  float gamma = 0.99F;
  float lr = 0.01F;
  bool sync = true;
  long max_episodes = 5000;
  std::int64_t kill_node = -1;
  std::int64_t kill_round = -1;
};

Settings settings() {
  const ditask::ModuleArgs p({"seed", "threshold", "gamma", "lr", "mode", "max_episodes", "kill_node",
                                      "kill_round"});
  Settings s;
  s.seed = static_cast<std::uint64_t>(p.integer("seed", 0));
  s.threshold = p.number("threshold", s.threshold);
  s.gamma = static_cast<float>(p.number("gamma", s.gamma));
  s.lr = static_cast<float>(p.number("lr", s.lr));
  const std::string mode = p.text("mode", "sync");
  if (mode != "sync" && mode != "async") {
    throw std::invalid_argument("mode must be sync or async, not '" + mode + "'");
  }
  s.sync = mode == "sync";
  s.max_episodes = static_cast<long>(p.integer("max_episodes", s.max_episodes));
  s.kill_node = p.integer("kill_node", -1);
  s.kill_round = p.integer("kill_round", -1);
  return s;
}

void say(const std::string& line) { std::cout << (line + "\n") << std::flush; }

std::int64_t attempt() {
  const char* text = std::getenv("DITASK_ATTEMPT");
  return text == nullptr ? 0 : std::stoll(text);
}

/// With --roles the learner is the node with that role; without, node 0 (the default layout).
bool is_learner(ditask::Task& task) {
  const auto roles = task.roles();
  return roles.empty() ? task.router().node_id() == 0 : roles.count("learner") != 0;
}

bool is_collector_peer(const ditask::PeerInfo& peer, bool with_roles) {
  return with_roles ? peer.labels.count("role.collector") != 0 : true;
}

// ---- collector -----------------------------------------------------------------------------

struct Inbox {
  std::optional<rl::Weights> weights;
  bool finished = false;
};

// Handlers capture the collector: it must outlive the task (main declares it before start()).
class Collector {
 public:
  explicit Collector(const Settings& s) : s_(s), policy_(rl::policy_sizes(), 0, rl::kPolicyDropout) {}

  void run() {
    auto& task = ditask::task();
    const std::int64_t me = task.router().node_id();
    const bool with_roles = !task.roles().empty();
    task.on("weights", [this](Bytes bytes) {
      auto w = rl::decode_weights(bytes);
      inbox_.update([&](Inbox& in) {
        if (!in.weights || w.version >= in.weights->version) {
          in.weights = std::move(w);
        }
      });
    });
    task.on(ditask::events::finish, [this](const ditask::EventArgs&) {
      inbox_.update([](Inbox& in) { in.finished = true; });
    });
    task.ready();
    std::optional<std::uint32_t> last;
    while (true) {
      std::optional<rl::Weights> w;
      const bool got = inbox_.wait(
          [&](const Inbox& in) { return in.finished || (in.weights && in.weights->version != last); },
          [&](Inbox& in) {
            if (!in.finished) {
              w = in.weights;
            }
          },
          std::chrono::hours(24));
      if (!got || !w) {
        return;  // the learner finished
      }
      last = w->version;
      if (me == s_.kill_node && static_cast<std::int64_t>(w->version) == s_.kill_round && attempt() == 0) {
        say("collector " + std::to_string(me) + ": killing myself at round " + std::to_string(w->version));
        std::raise(SIGKILL);
      }
      policy_.params() = w->params;
      const auto node = static_cast<std::uint64_t>(me);
      rl::CartPole env(rl::Rng::derive(s_.seed, node, w->version));
      rl::Rng rng(rl::Rng::derive(s_.seed, node, w->version, 1));
      const auto episode = rl::run_episode(policy_, env, rng, w->version, rl::Rng::derive(s_.seed, node, w->version, 2));
      if (with_roles) {
        task.emit_to_role("learner", "trajectory", me, rl::encode_trajectory(episode));
      } else {
        task.emit_to_node(0, "trajectory", me, rl::encode_trajectory(episode));
      }
    }
  }

 private:
  Settings s_;
  rl::Mlp policy_;
  rl::Shared<Inbox> inbox_;
};

// ---- learner -------------------------------------------------------------------------------

struct Round {
  std::uint32_t version = 0;
  std::set<std::int64_t> collectors;                 // expected in this round (alive)
  std::map<std::int64_t, rl::Trajectory> episodes;   // by collector, for `version` (sync)
  std::map<std::int64_t, rl::Trajectory> arrivals;   // any version, in arrival order per node (async)
  std::vector<std::int64_t> order;                   // async: who sent, in arrival order
  Bytes weights;                                     // the current weights, for a rejoining collector
};

// Handlers capture the learner: it must outlive the task (main declares it before start()).
class Learner {
 public:
  explicit Learner(const Settings& s)
      : s_(s), policy_(rl::policy_sizes(), rl::Rng::derive(s.seed, 0xC0FFEE), rl::kPolicyDropout),
        adam_(policy_.size(), s.lr) {}

  void run() {
    auto& task = ditask::task();
    const bool with_roles = !task.roles().empty();
    task.on("trajectory", [this](std::int64_t from, Bytes bytes) { arrived(from, rl::decode_trajectory(bytes)); });
    task.on(ditask::events::peer_left, [this](const ditask::Kwargs& kw) { left(kw); });
    task.on(ditask::events::peer_joined, [this, with_roles](const ditask::Kwargs& kw) { joined(kw, with_roles); });
    state_.update([&](Round& r) {
      for (const auto& peer : task.router().peers()) {
        if (is_collector_peer(peer, with_roles)) {
          r.collectors.insert(peer.node_id);
        }
      }
      r.weights = rl::encode_weights({0, policy_.params()});
    });
    task.ready();
    if (state_.read([](const Round& r) { return r.collectors.empty(); })) {
      throw std::runtime_error("the learner has no collector: start at least 2 workers");
    }
    say("learner: " + std::to_string(state_.read([](const Round& r) { return r.collectors.size(); })) +
        " collectors, " + (s_.sync ? "synchronous" : "asynchronous") + " rounds, seed " + std::to_string(s_.seed));
    with_roles_ = with_roles;
    broadcast(state_.read([](const Round& r) { return r.weights; }));
    while (!(s_.sync ? sync_round() : async_step())) {
    }
  }

 private:
  void arrived(std::int64_t from, rl::Trajectory t) {
    state_.update([&](Round& r) {
      if (s_.sync && t.version == r.version) {
        r.episodes[from] = std::move(t);
      } else if (!s_.sync) {
        r.arrivals[from] = std::move(t);
        r.order.push_back(from);
      }
    });
  }

  void left(const ditask::Kwargs& kw) {
    const auto node = kw.get<std::int64_t>("node_id");
    std::size_t remaining = 0;
    bool was = false;
    state_.update([&](Round& r) {
      was = r.collectors.erase(node) != 0;
      remaining = r.collectors.size();
    });
    if (was && !done_) {  // after the solve, collectors leave as they should
      say("learner: collector " + std::to_string(node) + " left (" + kw.get<std::string>("reason") +
          "); going on with " + std::to_string(remaining) + (remaining == 1 ? " collector" : " collectors"));
    }
  }

  void joined(const ditask::Kwargs& kw, bool with_roles) {
    const auto node = kw.get<std::int64_t>("node_id");
    const auto labels = kw.get<std::set<std::string>>("labels");
    if (kw.get<std::int64_t>("attempt") == 0 || (with_roles && labels.count("role.collector") == 0)) {
      return;  // the first incarnations were there at the start
    }
    Bytes weights;
    std::uint32_t version = 0;
    state_.update([&](Round& r) {
      r.collectors.insert(node);
      weights = r.weights;
      version = r.version;
    });
    rejoined_ = true;
    say("learner: collector " + std::to_string(node) + " rejoined (attempt " +
        std::to_string(kw.get<std::int64_t>("attempt")) + "); sent it the weights of round " + std::to_string(version));
    ditask::task().emit_to_node(node, "weights", weights);
  }

  // One synchronous round: every collector's episode for the current weights, then one update.
  // True when solved.
  bool sync_round() {
    std::map<std::int64_t, rl::Trajectory> episodes;
    const bool complete = state_.wait(
        [](const Round& r) {
          for (auto node : r.collectors) {
            if (r.episodes.count(node) == 0) {
              return false;
            }
          }
          return true;
        },
        [&](Round& r) {
          episodes = std::move(r.episodes);
          r.episodes.clear();
        },
        std::chrono::hours(24));
    if (!complete || episodes.empty()) {
      throw std::runtime_error("no collector left to run episodes");
    }
    Eigen::VectorXf grad = Eigen::VectorXf::Zero(policy_.size());
    for (const auto& [node, episode] : episodes) {
      grad += rl::reinforce_gradient(policy_, episode, s_.gamma);
    }
    if (account(episodes)) {
      return true;
    }
    adam_.step(policy_.params(), grad);
    Bytes weights;
    state_.update([&](Round& r) {
      ++r.version;
      r.weights = rl::encode_weights({r.version, policy_.params()});
      weights = r.weights;
    });
    broadcast(weights);
    return false;
  }

  void broadcast(const Bytes& weights) {
    if (with_roles_) {
      ditask::task().emit_to_role("collector", "weights", weights);
    } else {
      ditask::task().emit_remote("weights", weights);
    }
  }

  // Asynchronous: one update per episode, in arrival order; the sender gets the new weights.
  bool async_step() {
    std::int64_t from = 0;
    rl::Trajectory episode;
    if (!state_.wait([](const Round& r) { return !r.order.empty() || r.collectors.empty(); },
                     [&](Round& r) {
                       if (!r.order.empty()) {
                         from = r.order.front();
                         r.order.erase(r.order.begin());
                         episode = std::move(r.arrivals[from]);
                         r.arrivals.erase(from);
                       }
                     },
                     std::chrono::hours(24)) ||
        episode.actions.empty()) {
      throw std::runtime_error("no collector left to run episodes");
    }
    if (account({{from, episode}})) {
      return true;
    }
    adam_.step(policy_.params(), rl::reinforce_gradient(policy_, episode, s_.gamma));
    Bytes weights;
    state_.update([&](Round& r) {
      ++r.version;
      r.weights = rl::encode_weights({r.version, policy_.params()});
      weights = r.weights;
    });
    ditask::task().emit_to_node(from, "weights", weights);
    return false;
  }

  // Counts the episodes, logs every 10th, and reports a solve. True when solved.
  bool account(const std::map<std::int64_t, rl::Trajectory>& episodes) {
    for (const auto& [node, episode] : episodes) {
      ++episode_;
      const auto reward = static_cast<double>(episode.actions.size());
      const double running = running_.add(reward);
      ditask::metrics().scalar("reward", episode_, reward);  // --metrics-dir: the learning curve
      ditask::metrics().scalar("running_reward", episode_, running);
      if (episode_ % 10 == 0) {
        say(rl::episode_line(episode_, reward, running));
      }
      // With a collector set to kill itself (a test), the job ends only after it rejoined.
      if (running > s_.threshold && (s_.kill_node < 0 || rejoined_)) {
        done_ = true;
        say(rl::solved_line(running, static_cast<long>(episode.actions.size())));
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        char line[128];
        std::snprintf(line, sizeof line, "learner: solved after %ld episodes in %.1f s", episode_, secs);
        say(line);
        return true;
      }
      if (episode_ >= s_.max_episodes) {
        throw std::runtime_error("not solved after " + std::to_string(episode_) + " episodes (running reward " +
                                 std::to_string(running) + ")");
      }
    }
    return false;
  }

  Settings s_;
  rl::Mlp policy_;
  rl::Adam adam_;
  rl::RunningReward running_;
  long episode_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool with_roles_ = false;
  std::atomic<bool> done_{false};
  std::atomic<bool> rejoined_{false};
  rl::Shared<Round> state_;
};

}  // namespace

DITASK_MAIN(main) {
  const Settings s = settings();
  auto& task = ditask::task();
  // The role's object before the task: the handlers it registers die with the task, first.
  if (is_learner(task)) {
    Learner learner(s);
    auto running = task.start();
    learner.run();
  } else {
    Collector collector(s);
    auto running = task.start();
    collector.run();
  }
}
