// SPDX-License-Identifier: MIT
// The rendezvous over TCP: one launcher serves the table, the others send their entry (one JSON
// line) and get the table back (one JSON line), or at once an object {"error", "hint"} when the
// server refuses them. Blocking POSIX calls with poll() deadlines: it runs before the
// launcher's event loop exists.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"
#include "rendezvous_entry.hpp"

namespace ditask::launcher::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLine = 1 << 20;

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

/// The host (an IPv6 address without its brackets) and the port of tcp://host:port.
std::pair<std::string, std::string> host_port(const std::string& url) {
  const std::string rest = url.substr(6);
  const auto colon = rest.rfind(':');
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, rest.substr(colon + 1)};
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

/// Tells a connected launcher why it is refused (it fails at once with these words).
void refuse(int fd, const std::string& error, const std::string& hint) {
  write_line(fd, nlohmann::json{{"error", error}, {"hint", hint}}.dump());
}

/// Whether the launcher at the other end of `fd` has gone (it sends nothing after its entry).
bool gone(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
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

Fd listen_at(const RendezvousSpec& spec) {
  const auto [host, port] = host_port(spec.url);
  std::string why;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> info(resolve(spec, host, port, true, why), ::freeaddrinfo);
  if (!info) {
    throw RendezvousFailed("rendezvous: " + why, "the rank-0 launcher serves --rendezvous on its own host");
  }
  Fd server(::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(server.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (server.fd < 0 || ::bind(server.fd, info->ai_addr, info->ai_addrlen) != 0 || ::listen(server.fd, 256) != 0) {
    throw RendezvousFailed("rendezvous: cannot listen on " + spec.url + ": " + std::strerror(errno),
                           "the rank-0 launcher serves --rendezvous there: the port must be free on its host");
  }
  if (spec.on_serving) {
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(server.fd, reinterpret_cast<sockaddr*>(&bound), &len);
    const auto* in = reinterpret_cast<const sockaddr_in*>(&bound);  // sin_port sits alike in sockaddr_in6
    spec.on_serving(ntohs(in->sin_port));
  }
  return server;
}

}  // namespace

std::vector<RendezvousEntry> serve(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  Fd server = listen_at(spec);
  std::map<std::int64_t, RendezvousEntry> have{{mine.rank, mine}};
  std::map<std::int64_t, Fd> clients;
  std::vector<std::string> refused;  // launchers turned away, for the timeout message
  const auto deadline = Clock::now() + spec.timeout;
  const std::string here = "the launcher serving " + spec.url;
  while (static_cast<std::int64_t>(have.size()) < spec.tasks) {
    pollfd p{server.fd, POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) {
      throw RendezvousFailed("rendezvous: no launcher of rank " + missing_ranks(have, spec.tasks) + " came to " +
                                 spec.url + " " + within(spec) +
                                 (refused.empty() ? "" : "; refused: " + join(refused, "; ")),
                             kRendezvousHint);
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
    Published theirs;
    try {
      theirs = entry_from_json(j, "a launcher's entry");
    } catch (const RendezvousFailed& e) {
      DITASK_LOG(warn, "launcher") << e.what();
      refuse(client.fd, std::string("rendezvous: ") + here + " could not read this launcher's entry", e.hint());
      continue;
    }
    const auto rank = theirs.entry.rank;
    const std::string who = "rank " + std::to_string(rank) + " (host " + theirs.entry.host + ")";
    auto turn_away = [&](const std::string& ours, const std::string& theirs_words, const std::string& hint) {
      DITASK_LOG(warn, "launcher") << "rendezvous: refused " << ours;
      refuse(client.fd, "rendezvous: " + theirs_words, hint);
      refused.push_back(ours);
    };
    if (theirs.run_id != spec.run_id) {
      turn_away(who + " of run '" + theirs.run_id + "'",
                here + " serves run '" + spec.run_id + "', this launcher belongs to '" + theirs.run_id + "'",
                kRunIdHint);
      continue;
    }
    if (const auto why = conflict(spec, mine, theirs, who)) {
      // Same run, another world size: the job cannot form; both sides and everyone waiting hear why.
      refuse(client.fd,
             "rendezvous: " + here + " says the job has " + std::to_string(mine.world_size) +
                 " workers (--world-size), this launcher " + std::to_string(theirs.entry.world_size),
             why->hint);
      const std::string told = "rendezvous: the job cannot form: " + who + " says the job has " +
                               std::to_string(theirs.entry.world_size) + " workers (--world-size), " + here +
                               " says " + std::to_string(mine.world_size);
      for (auto& [r, c] : clients) {
        refuse(c.fd, told, why->hint);
      }
      throw RendezvousFailed("rendezvous: " + why->reason, why->hint);
    }
    if (rank < 0 || rank >= spec.tasks || rank == mine.rank) {
      const bool own = rank == mine.rank;
      turn_away(who + (own ? ", this launcher's own rank" : ", outside 0.." + std::to_string(spec.tasks - 1)),
                own ? "rank " + std::to_string(rank) + " is taken by " + here
                    : "rank " + std::to_string(rank) + " is outside the job's ranks 0.." +
                          std::to_string(spec.tasks - 1) + " at " + here,
                "give each launcher of the job its own --node-ids (rank r runs node ids r*N .. r*N+N-1), and "
                "every launcher the same --world-size");
      continue;
    }
    if (auto old = clients.find(rank); old != clients.end() && have.at(rank).instance != theirs.entry.instance &&
                                       !gone(old->second.fd)) {
      turn_away(who + ", a second claim of that rank (the first from host " + have.at(rank).host + ")",
                "rank " + std::to_string(rank) + " of run '" + spec.run_id + "' is already taken at " + here +
                    " by a launcher on host " + have.at(rank).host,
                "give each launcher of the job its own --node-ids, and each job its own --run-id");
      continue;
    }
    have[rank] = std::move(theirs.entry);  // a launcher that retried replaces its earlier entry
    clients.erase(rank);
    clients.emplace(rank, std::move(client));
  }
  std::vector<RendezvousEntry> table = table_of(std::move(have));
  nlohmann::json all = nlohmann::json::array();
  for (const auto& e : table) {
    all.push_back(entry_json(published(spec.run_id, e)));
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
        if (write_line(c.fd, entry_json(published(spec.run_id, mine)).dump())) {
          const auto line = read_line(c.fd, deadline);
          const auto j = nlohmann::json::parse(line, nullptr, false);
          if (j.is_object() && j.contains("error") && j.at("error").is_string()) {
            throw RendezvousFailed(j.at("error").get<std::string>(), j.value("hint", std::string()));
          }
          if (j.is_array()) {
            std::vector<RendezvousEntry> table;
            for (const auto& item : j) {
              const auto p = entry_from_json(item, "the table");
              const std::string who = "rank " + std::to_string(p.entry.rank) + " (host " + p.entry.host + ")";
              if (const auto bad = conflict(spec, mine, p, who)) {
                throw RendezvousFailed("rendezvous: " + bad->reason, bad->hint);
              }
              table.push_back(p.entry);
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
  throw RendezvousFailed("rendezvous: no table from " + spec.url + " " + within(spec) + ": " + why, kRendezvousHint);
}

}  // namespace ditask::launcher::detail
