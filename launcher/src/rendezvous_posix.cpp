// SPDX-License-Identifier: MIT
// The rendezvous over a shared folder or a TCP connection to the rank-0 launcher. Blocking POSIX
// calls with poll() deadlines: it runs before the launcher's event loop exists.
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"
#include "rendezvous.hpp"

namespace ditask::launcher {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr std::size_t kMaxLine = 1 << 20;
constexpr const char* kHint = "start every launcher of the job with the same --rendezvous and run id, within --startup-timeout";

nlohmann::json to_json(const RendezvousEntry& e, const std::string& run_id) {
  return {{"run_id", run_id}, {"rank", e.rank}, {"host", e.host}, {"listen", e.listen}};
}

RendezvousEntry from_json(const nlohmann::json& j, const std::string& run_id, const std::string& where) {
  try {
    if (j.at("run_id").get<std::string>() != run_id) {
      throw Error("rendezvous: " + where + " belongs to run '" + j.at("run_id").get<std::string>() + "', not '" +
                      run_id + "'",
                  "give every launcher of one job the same run id (--run-id), and another one to the next job");
    }
    return {j.at("rank").get<std::int64_t>(), j.at("host").get<std::string>(),
            j.at("listen").get<std::vector<std::string>>()};
  } catch (const nlohmann::json::exception& e) {
    throw Error("rendezvous: " + where + " is malformed: " + e.what(), kHint);
  }
}

std::string missing_ranks(const std::map<std::int64_t, RendezvousEntry>& have, std::int64_t tasks) {
  std::vector<std::string> missing;
  for (std::int64_t r = 0; r < tasks; ++r) {
    if (have.count(r) == 0) {
      missing.push_back(std::to_string(r));
    }
  }
  return join(missing, ", ");
}

std::vector<RendezvousEntry> table_of(std::map<std::int64_t, RendezvousEntry> have) {
  std::vector<RendezvousEntry> table;
  for (auto& [rank, e] : have) {
    table.push_back(std::move(e));
  }
  return table;
}

// ---- file:///dir -------------------------------------------------------------------------------

std::vector<RendezvousEntry> by_folder(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  const fs::path dir = fs::path(spec.url.substr(7)) / spec.run_id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error("rendezvous: cannot create '" + dir.string() + "': " + ec.message(),
                "--rendezvous file:// needs a folder every launcher can write");
  }
  const auto file = dir / ("rank-" + std::to_string(mine.rank) + ".json");
  {
    // Written whole, then renamed: a reader never sees half an entry.
    const auto tmp = dir / ("." + file.filename().string() + ".tmp");
    std::ofstream out(tmp);
    out << to_json(mine, spec.run_id).dump() << "\n";
    out.close();
    if (!out || (fs::rename(tmp, file, ec), ec)) {
      throw Error("rendezvous: cannot write '" + file.string() + "'", "check that the folder is writable");
    }
  }
  std::map<std::int64_t, RendezvousEntry> have;
  const auto deadline = Clock::now() + spec.timeout;
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    for (std::int64_t r = 0; r < spec.tasks; ++r) {
      if (have.count(r) != 0) {
        continue;
      }
      std::ifstream in(dir / ("rank-" + std::to_string(r) + ".json"));
      std::string line;
      if (in && std::getline(in, line)) {
        auto e = from_json(nlohmann::json::parse(line, nullptr, false), spec.run_id, "rank " + std::to_string(r));
        have.emplace(r, std::move(e));
      }
    }
    if (static_cast<std::int64_t>(have.size()) == spec.tasks) {
      return table_of(std::move(have));
    }
    if (Clock::now() > deadline) {
      throw Error("rendezvous: no entry of rank " + missing_ranks(have, spec.tasks) + " in " + dir.string() +
                      " within " + std::to_string(spec.timeout.count() / 1000) + " s",
                  kHint);
    }
    // A shared folder may be NFS, where no change notification reaches other hosts: poll, with backoff.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
}

// ---- tcp://host:port ---------------------------------------------------------------------------

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

std::pair<std::string, std::string> host_port(const std::string& url) {
  const std::string rest = url.substr(6);
  const auto colon = rest.rfind(':');
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

/// Reads one '\n'-ended line (at most kMaxLine) before the deadline; "" on EOF or timeout.
std::string read_line(int fd, Clock::time_point deadline) {
  std::string line;
  char buf[4096];
  while (line.find('\n') == std::string::npos && line.size() < kMaxLine) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) {
      return "";
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      return "";
    }
    line.append(buf, static_cast<std::size_t>(n));
  }
  return line.substr(0, line.find('\n'));
}

bool write_line(int fd, const std::string& text) {
  const std::string line = text + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

addrinfo* resolve(const RendezvousSpec& spec, const std::string& host, const std::string& port, bool passive,
                  std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* info = nullptr;
  const std::string name = mapped_host(spec.hosts, host);
  if (int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &info); rc != 0) {
    why = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return nullptr;
  }
  return info;
}

std::vector<RendezvousEntry> serve(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  const auto [host, port] = host_port(spec.url);
  std::string why;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> info(resolve(spec, host, port, true, why), ::freeaddrinfo);
  if (!info) {
    throw Error("rendezvous: " + why, "the rank-0 launcher serves --rendezvous on its own host");
  }
  Fd server(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(server.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (server.fd < 0 || ::bind(server.fd, info->ai_addr, info->ai_addrlen) != 0 || ::listen(server.fd, 256) != 0) {
    throw Error("rendezvous: cannot listen on " + spec.url + ": " + std::strerror(errno),
                "the rank-0 launcher serves --rendezvous there: the port must be free on its host");
  }
  std::map<std::int64_t, RendezvousEntry> have{{mine.rank, mine}};
  std::map<std::int64_t, Fd> clients;
  const auto deadline = Clock::now() + spec.timeout;
  while (static_cast<std::int64_t>(have.size()) < spec.tasks) {
    pollfd p{server.fd, POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) {
      throw Error("rendezvous: launchers of rank " + missing_ranks(have, spec.tasks) + " did not come to " + spec.url +
                      " within " + std::to_string(spec.timeout.count() / 1000) + " s",
                  kHint);
    }
    Fd client(::accept4(server.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (client.fd < 0) {
      continue;
    }
    const auto line = read_line(client.fd, std::min(deadline, Clock::now() + std::chrono::seconds(10)));
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      DITASK_LOG(warn, "launcher") << "rendezvous: ignoring a connection that sent no entry";
      continue;
    }
    auto e = from_json(j, spec.run_id, "a launcher");
    const auto rank = e.rank;
    if (rank < 0 || rank >= spec.tasks || rank == mine.rank) {  // the server's own rank is its own
      DITASK_LOG(warn, "launcher") << "rendezvous: ignoring rank " << rank << " (the job has " << spec.tasks << ")";
      continue;
    }
    have[rank] = std::move(e);  // a launcher that retried replaces its earlier entry
    clients.erase(rank);
    clients.emplace(rank, std::move(client));
  }
  std::vector<RendezvousEntry> table = table_of(std::move(have));
  nlohmann::json all = nlohmann::json::array();
  for (const auto& e : table) {
    all.push_back(to_json(e, spec.run_id));
  }
  for (auto& [rank, client] : clients) {
    if (!write_line(client.fd, all.dump())) {
      DITASK_LOG(warn, "launcher") << "rendezvous: could not send the table to rank " << rank;
    }
  }
  return table;
}

std::vector<RendezvousEntry> join_server(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  const auto [host, port] = host_port(spec.url);
  const auto deadline = Clock::now() + spec.timeout;
  auto pause = std::chrono::milliseconds(20);
  std::string why = "no answer";
  while (Clock::now() < deadline) {
    // Every failure is retried until the deadline: the rank-0 launcher may start later, its
    // name may resolve only later (pod DNS).
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> info(resolve(spec, host, port, false, why), ::freeaddrinfo);
    if (info) {
      Fd c(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0));
      if (c.fd >= 0 && ::connect(c.fd, info->ai_addr, info->ai_addrlen) == 0) {
        if (write_line(c.fd, to_json(mine, spec.run_id).dump())) {
          const auto line = read_line(c.fd, deadline);
          const auto j = nlohmann::json::parse(line, nullptr, false);
          if (j.is_array()) {
            std::vector<RendezvousEntry> table;
            for (const auto& item : j) {
              table.push_back(from_json(item, spec.run_id, "the table"));
            }
            return table;
          }
          why = "the rank-0 launcher closed the connection without the table";
        }
      } else {
        why = std::strerror(errno);
      }
    }
    std::this_thread::sleep_for(std::min(pause, std::chrono::milliseconds(ms_left(deadline))));
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
  throw Error("rendezvous: no table from " + spec.url + " within " + std::to_string(spec.timeout.count() / 1000) +
                  " s: " + why,
              kHint);
}

}  // namespace

void check_rendezvous_url(const std::string& url) {
  if (url.rfind("file:///", 0) == 0 && url.size() > 8) {
    return;
  }
  if (url.rfind("tcp://", 0) == 0) {
    const auto rest = url.substr(6);
    const auto colon = rest.rfind(':');
    const bool port_ok = colon != std::string::npos && colon + 1 < rest.size() &&
                         rest.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                         std::stol(rest.substr(colon + 1)) >= 1 && std::stol(rest.substr(colon + 1)) <= 65535;
    if (colon != 0 && port_ok) {
      return;
    }
  }
  if (url == "auto") {
    return;
  }
  throw Error("--rendezvous '" + url + "' is not file:///dir, tcp://host:port or auto",
              "file:///shared/dir (a folder every launcher sees), tcp://host:port (served by the rank-0 "
              "launcher), auto (tcp on the job's first host)");
}

std::vector<RendezvousEntry> rendezvous(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  if (spec.url.rfind("file://", 0) == 0) {
    return by_folder(spec, mine);
  }
  return spec.serve ? serve(spec, mine) : join_server(spec, mine);
}

std::vector<std::string> attach_from(const std::vector<RendezvousEntry>& table, std::int64_t rank,
                                     const std::string& topology) {
  std::vector<std::string> out;
  if (topology == "alone") {
    return out;
  }
  const std::int64_t last = topology == "mesh" ? rank : std::min<std::int64_t>(rank, 1);
  for (const auto& e : table) {
    if (e.rank < last) {
      out.insert(out.end(), e.listen.begin(), e.listen.end());
    }
  }
  return out;
}

}  // namespace ditask::launcher
