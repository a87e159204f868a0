// SPDX-License-Identifier: MIT
// The launchers' rendezvous, each launcher a thread: over tcp (served on port 0 of 127.0.0.1) and
// over a folder. A launcher that cannot be in the job (another run id, another world size, a
// rank taken twice) is told at once, and an entry an earlier run left in a folder is not used.
// A refusal that waited for its timeout instead would outlast ctest's 60 s: the timeouts of the
// refused launchers below are longer than that on purpose.
#include "rendezvous.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "rendezvous_entry.hpp"

using namespace std::chrono_literals;
using ditask::launcher::RendezvousEntry;
using ditask::launcher::RendezvousFailed;
using ditask::launcher::RendezvousSpec;
using ditask::test::error_of;
using ditask::test::TempDir;

namespace {

constexpr auto kLong = std::chrono::milliseconds(600000);  // never reached by a passing test

RendezvousEntry entry(std::int64_t rank, std::int64_t world_size, std::string host = "127.0.0.1") {
  RendezvousEntry e;
  e.rank = rank;
  e.host = std::move(host);
  e.listen = {"tcp://127.0.0.1:" + std::to_string(10000 + rank)};
  e.world_size = world_size;
  e.instance = ditask::launcher::new_rendezvous_instance();
  return e;
}

/// A tcp rendezvous served by a thread; joiner() gives the spec of a launcher that connects.
struct Served {
  RendezvousSpec spec;
  std::future<std::vector<RendezvousEntry>> table;
  int port = 0;

  Served(std::string run_id, std::int64_t tasks, RendezvousEntry mine, std::chrono::milliseconds timeout = kLong) {
    spec.url = "tcp://127.0.0.1:0";
    spec.run_id = std::move(run_id);
    spec.tasks = tasks;
    spec.timeout = timeout;
    spec.serve = true;
    std::promise<int> bound;
    auto bound_port = bound.get_future();
    spec.on_serving = [&bound](int p) { bound.set_value(p); };
    table = std::async(std::launch::async, [s = spec, mine] { return ditask::launcher::rendezvous(s, mine); });
    port = bound_port.get();
  }
  RendezvousSpec joiner(std::string run_id, std::int64_t tasks, std::chrono::milliseconds timeout = kLong) const {
    RendezvousSpec j;
    j.url = "tcp://127.0.0.1:" + std::to_string(port);
    j.run_id = std::move(run_id);
    j.tasks = tasks;
    j.timeout = timeout;
    return j;
  }
};

std::future<std::vector<RendezvousEntry>> join(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  return std::async(std::launch::async, [spec, mine] { return ditask::launcher::rendezvous(spec, mine); });
}

/// A launcher joining by hand, so the test knows its entry is queued at the server before the
/// next one connects (the server reads its connections in the order they came).
struct RawJoin {
  int fd = -1;
  RawJoin(int port, const std::string& run_id, const RendezvousEntry& mine) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const auto line = ditask::launcher::detail::entry_json(ditask::launcher::detail::published(run_id, mine)).dump() + "\n";
    REQUIRE(::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  }
  ~RawJoin() { ::close(fd); }
  /// The server's answer: the table or an {"error", "hint"} object.
  nlohmann::json answer() const {
    std::string text;
    char c = 0;
    while (::read(fd, &c, 1) == 1 && c != '\n') {
      text += c;
    }
    return nlohmann::json::parse(text, nullptr, false);
  }
};

/// The RendezvousFailed that `f` ends with (the test fails on any other end).
template <class Future>
RendezvousFailed failure_of(Future& f) {
  try {
    f.get();
  } catch (const RendezvousFailed& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("expected RendezvousFailed, got: " << e.what());
  }
  FAIL("expected RendezvousFailed, got a table");
  return RendezvousFailed("unreachable");
}

RendezvousSpec folder_spec(const TempDir& dir, std::string run_id, std::int64_t tasks,
                           std::chrono::milliseconds timeout = kLong) {
  RendezvousSpec s;
  s.url = "file://" + dir.path();
  s.run_id = std::move(run_id);
  s.tasks = tasks;
  s.timeout = timeout;
  return s;
}

std::vector<std::string> listens(const std::vector<RendezvousEntry>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) {
    out.insert(out.end(), e.listen.begin(), e.listen.end());
  }
  return out;
}

}  // namespace

TEST_CASE("rendezvous tcp: every launcher gets the whole table", "[launcher][rendezvous]") {
  Served server("run", 3, entry(0, 6));
  auto one = join(server.joiner("run", 3), entry(1, 6));
  auto two = join(server.joiner("run", 3), entry(2, 6));
  const std::vector<std::string> want = {"tcp://127.0.0.1:10000", "tcp://127.0.0.1:10001", "tcp://127.0.0.1:10002"};
  CHECK(listens(server.table.get()) == want);
  CHECK(listens(one.get()) == want);
  CHECK(listens(two.get()) == want);
}

TEST_CASE("rendezvous tcp: an IPv6 address in brackets", "[launcher][rendezvous]") {
  RendezvousSpec spec;
  spec.url = "tcp://[::1]:0";
  spec.run_id = "run";
  spec.tasks = 2;
  spec.timeout = kLong;
  spec.serve = true;
  std::promise<int> bound;
  auto port = bound.get_future();
  spec.on_serving = [&bound](int p) { bound.set_value(p); };
  auto server = std::async(std::launch::async, [&spec] { return ditask::launcher::rendezvous(spec, entry(0, 4)); });
  RendezvousSpec joiner = spec;
  joiner.url = "tcp://[::1]:" + std::to_string(port.get());
  joiner.serve = false;
  joiner.on_serving = nullptr;
  CHECK(join(joiner, entry(1, 4)).get().size() == 2);
  CHECK(server.get().size() == 2);
}

TEST_CASE("rendezvous tcp: a launcher of another run id is refused at once, the job still forms",
          "[launcher][rendezvous]") {
  Served server("job-a", 2, entry(0, 4));
  auto foreign = join(server.joiner("job-b", 2), entry(1, 4));
  const auto e = failure_of(foreign);
  CHECK(std::string(e.what()) == "rendezvous: the launcher serving tcp://127.0.0.1:0"
                                     " serves run 'job-a', this launcher belongs to 'job-b'");
  CHECK_THAT(e.hint(), Catch::Contains("--run-id"));
  auto right = join(server.joiner("job-a", 2), entry(1, 4));
  CHECK(right.get().size() == 2);
  CHECK(server.table.get().size() == 2);
}

TEST_CASE("rendezvous tcp: the serving launcher's timeout names the launchers it refused", "[launcher][rendezvous]") {
  Served server("job-a", 2, entry(0, 4), 300ms);
  auto foreign = join(server.joiner("job-b", 2), entry(1, 4, "hostb"));
  CHECK_THAT(failure_of(foreign).what(), Catch::Contains("serves run 'job-a'"));
  const auto e = failure_of(server.table);
  CHECK(std::string(e.what()) == "rendezvous: no launcher of rank 1 came to tcp://127.0.0.1:0 within 0.3 s; "
                                 "refused: rank 1 (host hostb) of run 'job-b'");
}

TEST_CASE("rendezvous tcp: another --world-size fails the job on every launcher at once", "[launcher][rendezvous]") {
  Served server("run", 3, entry(0, 6));
  RawJoin waiting(server.port, "run", entry(1, 6));
  auto odd = join(server.joiner("run", 2), entry(2, 4, "hostc"));
  const auto mine = failure_of(odd);
  CHECK(std::string(mine.what()) == "rendezvous: the launcher serving tcp://127.0.0.1:0"
                                        " says the job has 6 workers (--world-size), this launcher 4");
  CHECK_THAT(mine.hint(), Catch::Contains("the same --world-size"));
  const auto served = failure_of(server.table);
  CHECK(std::string(served.what()) ==
        "rendezvous: rank 2 (host hostc) says the job has 4 workers (--world-size), this launcher 6");
  const auto told = waiting.answer();
  REQUIRE(told.is_object());
  CHECK(told.value("error", "") ==
        "rendezvous: the job cannot form: rank 2 (host hostc) says the job has 4 workers (--world-size), the "
        "launcher serving tcp://127.0.0.1:0 says 6");
}

TEST_CASE("rendezvous tcp: a rank taken twice or outside the job is refused", "[launcher][rendezvous]") {
  Served server("run", 3, entry(0, 6));
  auto outside = join(server.joiner("run", 3), entry(5, 6));
  CHECK_THAT(failure_of(outside).what(), Catch::EndsWith("rank 5 is outside the job's ranks 0..2 at the launcher "
                                                         "serving tcp://127.0.0.1:0"));
  auto own = join(server.joiner("run", 3), entry(0, 6));
  CHECK_THAT(failure_of(own).what(), Catch::Contains("rank 0 is taken by the launcher serving"));
  RawJoin first(server.port, "run", entry(1, 6, "hosta"));
  auto second = join(server.joiner("run", 3), entry(1, 6, "hostb"));
  CHECK(std::string(failure_of(second).what()) == "rendezvous: rank 1 of run 'run' is already taken at the launcher "
                                                  "serving tcp://127.0.0.1:0 by a launcher on host hosta");
  auto last = join(server.joiner("run", 3), entry(2, 6));
  CHECK(last.get().size() == 3);
  CHECK(first.answer().size() == 3);
  CHECK(server.table.get().size() == 3);
}

TEST_CASE("rendezvous tcp: a port that does not fit a port number is a usage error", "[launcher][rendezvous]") {
  CHECK_THAT(error_of([] { ditask::launcher::check_rendezvous_url("tcp://h:99999999999999999999"); }).what(),
             Catch::StartsWith("--rendezvous 'tcp://h:99999999999999999999' is not"));
}

TEST_CASE("rendezvous folder: every launcher gets the table, and a re-run with the run id starts clean",
          "[launcher][rendezvous]") {
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    auto a = entry(0, 4);
    auto b = entry(1, 4);
    a.listen = {"tcp://127.0.0.1:" + std::to_string(20000 + run)};
    b.listen = {"tcp://127.0.0.1:" + std::to_string(30000 + run)};
    auto one = join(folder_spec(dir, "same", 2), a);
    auto two = join(folder_spec(dir, "same", 2), b);
    const auto t1 = one.get();
    const auto t2 = two.get();
    const std::vector<std::string> want = {a.listen[0], b.listen[0]};
    CHECK(listens(t1) == want);
    CHECK(listens(t2) == want);
    ditask::launcher::leave_rendezvous(folder_spec(dir, "same", 2), t1);
    ditask::launcher::leave_rendezvous(folder_spec(dir, "same", 2), t2);
    CHECK_FALSE(std::filesystem::exists(dir.file("same")));
  }
}

TEST_CASE("rendezvous folder: an entry an earlier run left is not used", "[launcher][rendezvous]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("same"));
  const auto two_hours_ago = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch() - std::chrono::hours(2))
                                   .count();
  dir.write("same/rank-0.json", nlohmann::json{{"run_id", "same"},
                                               {"rank", 0},
                                               {"host", "old"},
                                               {"listen", {"tcp://127.0.0.1:1"}},
                                               {"world_size", 4},
                                               {"instance", "0123"},
                                               {"written_ms", two_hours_ago},
                                               {"complete", false}}
                                        .dump() +
                                    "\n");
  auto alone = join(folder_spec(dir, "same", 2, 300ms), entry(1, 4));
  const auto e = failure_of(alone);
  CHECK_THAT(e.what(), Catch::StartsWith("rendezvous: no entry of rank 0 in " + dir.file("same") + " within 0.3 s; "
                                         "rank 0's entry is left from an earlier run (written "));
  CHECK_THAT(e.hint(), Catch::StartsWith("remove " + dir.file("same") + " or give this run another --run-id"));
  std::ifstream left(dir.file("same/rank-1.json"));
  std::string line;
  std::getline(left, line);
  CHECK(nlohmann::json::parse(line).value("failed", false));  // the failed launcher's entry says so
  // The live rank 0 replaces the leftover, and the job forms with its address.
  auto one = join(folder_spec(dir, "same", 2), entry(1, 4));
  auto zero = join(folder_spec(dir, "same", 2), entry(0, 4));
  CHECK(listens(one.get()) == std::vector<std::string>{"tcp://127.0.0.1:10000", "tcp://127.0.0.1:10001"});
  CHECK(zero.get().size() == 2);
}

TEST_CASE("rendezvous folder: another world size or a rank claimed twice fails at once", "[launcher][rendezvous]") {
  TempDir dir;
  SECTION("world size") {
    auto six = join(folder_spec(dir, "r", 3), entry(1, 6, "hostb"));
    auto four = join(folder_spec(dir, "r", 2), entry(0, 4, "hosta"));
    const auto e = failure_of(four);
    CHECK(std::string(e.what()) == "rendezvous: rank 1 (host hostb) says the job has 6 workers (--world-size), "
                                   "this launcher 4");
    CHECK_THAT(failure_of(six).what(), Catch::Contains("says the job has 4 workers (--world-size), this launcher 6"));
    // Both entries stay, marked failed: the same run id, started again the right way, forms
    // with the new launchers' addresses, not the failed ones'.
    auto a = entry(0, 4);
    auto b = entry(1, 4);
    a.listen = {"tcp://127.0.0.1:20000"};
    b.listen = {"tcp://127.0.0.1:20001"};
    auto zero = join(folder_spec(dir, "r", 2), a);
    auto one = join(folder_spec(dir, "r", 2), b);
    const std::vector<std::string> want = {"tcp://127.0.0.1:20000", "tcp://127.0.0.1:20001"};
    CHECK(listens(zero.get()) == want);
    CHECK(listens(one.get()) == want);
  }
  SECTION("rank claimed twice") {
    auto first = join(folder_spec(dir, "r", 2), entry(1, 4, "hosta"));
    while (!std::filesystem::exists(dir.file("r/rank-1.json"))) {
      std::this_thread::sleep_for(1ms);
    }
    auto second = join(folder_spec(dir, "r", 2), entry(1, 4, "hostb"));
    const auto e = failure_of(second);
    CHECK_THAT(e.what(), Catch::StartsWith("rendezvous: rank 1 of run 'r' is already claimed in " + dir.file("r") +
                                           " by a launcher on host hosta (pid "));
    CHECK_THAT(e.hint(), Catch::EndsWith("if that launcher is gone, remove " + dir.file("r/rank-1.json")));
    // The first claim goes on and meets rank 0.
    auto zero = join(folder_spec(dir, "r", 2), entry(0, 4));
    CHECK(first.get().size() == 2);
    CHECK(zero.get().size() == 2);
  }
}

TEST_CASE("rendezvous folder: the entry of a launcher that is gone is not used, nor a claim", "[launcher][rendezvous]") {
  // A launcher stopped by a signal while it waited leaves its entry, not marked failed. On the
  // same machine its pid tells: a child that has exited and been reaped stands for it.
  const pid_t gone = ::fork();
  if (gone == 0) {
    ::_exit(0);
  }
  REQUIRE(gone > 0);
  REQUIRE(::waitpid(gone, nullptr, 0) == gone);
  char machine[256] = {};
  ::gethostname(machine, sizeof machine - 1);
  TempDir dir;
  std::filesystem::create_directories(dir.file("k1"));
  auto dead = [&](int rank) {
    return nlohmann::json{{"run_id", "k1"},       {"rank", rank},       {"host", "127.0.0.1"},
                          {"listen", {"tcp://127.0.0.1:1"}}, {"world_size", 4}, {"instance", "dead"},
                          {"written_ms", ditask::launcher::detail::wall_ms()},    {"complete", false},
                          {"failed", false},      {"machine", machine}, {"pid", gone},
                          {"space", ditask::launcher::detail::this_process_space()}}
               .dump() +
           "\n";
  };
  dir.write("k1/rank-0.json", dead(0));
  dir.write("k1/rank-1.json", dead(1));
  // Rank 1 claims over the dead entry; rank 0's dead entry is not taken for a live launcher.
  auto alone = join(folder_spec(dir, "k1", 2, 300ms), entry(1, 4));
  CHECK_THAT(failure_of(alone).what(),
             Catch::EndsWith("rank 0's entry is left from an earlier run (its launcher, pid " + std::to_string(gone) +
                             " on this machine, is gone)"));
  dir.write("k1/rank-1.json", dead(1));
  auto one = join(folder_spec(dir, "k1", 2), entry(1, 4));
  auto zero = join(folder_spec(dir, "k1", 2), entry(0, 4));
  CHECK(listens(one.get()) == std::vector<std::string>{"tcp://127.0.0.1:10000", "tcp://127.0.0.1:10001"});
  CHECK(zero.get().size() == 2);
}

TEST_CASE("rendezvous folder: a launcher that met and ended before this one read its entry is met all the same",
          "[launcher][rendezvous]") {
  // Rank 1 reads rank 0's entry, meets, runs a short job and ends between two of rank 0's reads:
  // its entry is complete, written after rank 0 started, and its pid is gone.
  const pid_t ended = ::fork();
  if (ended == 0) {
    ::_exit(0);
  }
  REQUIRE(ended > 0);
  REQUIRE(::waitpid(ended, nullptr, 0) == ended);
  TempDir dir;
  auto zero = join(folder_spec(dir, "fast", 2), entry(0, 4));
  while (!std::filesystem::exists(dir.file("fast/rank-0.json"))) {
    std::this_thread::sleep_for(1ms);
  }
  auto one = ditask::launcher::detail::published("fast", entry(1, 4));
  one.complete = true;
  one.written_us = ditask::launcher::detail::wall_us();
  one.pid = ended;
  one.space = ditask::launcher::detail::this_process_space();
  dir.write("fast/rank-1.json", ditask::launcher::detail::entry_json(one).dump() + "\n");
  CHECK(listens(zero.get()) == std::vector<std::string>{"tcp://127.0.0.1:10000", "tcp://127.0.0.1:10001"});
}

TEST_CASE("rendezvous: a node id on two launchers fails every launcher at once", "[launcher][rendezvous]") {
  auto a = entry(0, 4);
  auto b = entry(1, 4, "hostb");
  a.nodes = {0, 3};
  b.nodes = {2, 3};
  Served server("run", 2, a);
  auto other = join(server.joiner("run", 2), b);
  const std::string want = "rendezvous: node id 3 is on two launchers: rank 0 (host 127.0.0.1) and rank 1 (host hostb)";
  CHECK(std::string(failure_of(other).what()) == want);
  const auto served = failure_of(server.table);
  CHECK(std::string(served.what()) == want);
  CHECK(served.hint() == "give each launcher of the job its own --node-ids");
}
