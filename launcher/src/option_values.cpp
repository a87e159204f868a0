// SPDX-License-Identifier: MIT
#include "option_values.hpp"

#include "ditask/launcher/roles.hpp"
#include "layout_option.hpp"
#include "ditask/runtime/hosts.hpp"
#include "ditask/runtime/mesh_address.hpp"
#include "rendezvous.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::launcher::detail {
namespace {

std::string flag(const std::string& name) { return "--" + name; }

std::int64_t to_integer(const std::string& name, const std::string& text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw Error(flag(name) + " expects an integer, got '" + text + "'");
  }
  return value;
}

}  // namespace

double to_seconds(const std::string& name, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(value)) {
    throw Error(flag(name) + " expects a number of seconds, got '" + text + "'",
                "fractions are allowed, e.g. " + flag(name) + " 2.5");
  }
  // A steady_clock deadline in nanoseconds holds about 292 years from boot; far past it a
  // timer's deadline wraps around and fires at once.
  if (value > kMaxSeconds) {
    throw Error(flag(name) + " must be at most 1e9 seconds (about 31 years), got '" + text + "'",
                name == "timeout" ? "--timeout 0 means no time limit" : "");
  }
  return value;
}

bool to_bool(const std::string& name, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") {
    return true;
  }
  if (text == "false" || text == "0" || text == "no" || text == "off") {
    return false;
  }
  throw Error(flag(name) + " expects true or false, got '" + text + "'", kFlagValueHint);
}

void check_tag_format(const std::string& format) {
  static const std::vector<std::string> kPlaceholders = {"{node}", "{rank}", "{local}", "{attempt}"};
  for (auto at = format.find('{'); at != std::string::npos; at = format.find('{', at + 1)) {
    const auto known = std::find_if(kPlaceholders.begin(), kPlaceholders.end(),
                                    [&](const std::string& p) { return format.compare(at, p.size(), p) == 0; });
    if (known != kPlaceholders.end()) {
      continue;
    }
    const auto close = format.find('}', at);
    const std::string given = format.substr(at, close == std::string::npos ? std::string::npos : close - at + 1);
    auto guess = closest_match(given, kPlaceholders);
    throw Error("--tag-format '" + format + "': unknown placeholder '" + given + "'",
                (guess ? "did you mean '" + *guess + "'? " : std::string()) + "(placeholders: " + join(kPlaceholders) +
                    ")");
  }
}

void require_choice(const std::string& name, const std::string& value) {
  const OptionSpec* spec = find_option_spec(name);
  if (spec == nullptr || spec->choices.empty()) {
    return;
  }
  if (std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
    auto guess = closest_match(value, spec->choices);
    throw Error("unknown " + flag(name) + " '" + value + "'",
                (guess ? "did you mean '" + *guess + "'? " : std::string()) + "valid choices: " + join(spec->choices));
  }
}

namespace {

std::vector<std::int64_t> to_integer_list(const std::string& name, const std::string& text) {
  std::vector<std::int64_t> out;
  for (const auto& item : split_list(text)) {
    out.push_back(to_integer(name, item));
  }
  return out;
}

void check_at_least(const std::string& name, double value, double minimum, const std::string& raw) {
  if (value < minimum) {
    std::ostringstream shown;
    shown << value;
    throw Error(flag(name) + " must be at least " + raw + ", got " + shown.str());
  }
}

void check_attach_to(const std::vector<std::string>& urls) {
  for (const auto& url : urls) {
    const bool tcp = url.rfind("tcp://", 0) == 0 && url.find(':', 6) != std::string::npos;
    const bool ipc = url.rfind("ipc://", 0) == 0 && url.size() > 6;
    if (!tcp && !ipc) {
      throw Error("--attach-to address '" + url + "' is not tcp://host:port or ipc:///path");
    }
    if (auto why = mesh_address_problem(url); !why.empty()) {  // as the workers would parse it
      throw Error("--attach-to address '" + url + "': " + why, std::string(kMeshAddressHint));
    }
  }
}

}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) {
      out.push_back(item);
    }
    start = end + 1;
  }
  return out;
}

Options build_options(const RawValues& values) {
  auto get = [&](const std::string& name) -> const std::string* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  Options o;
  if (const auto* v = get("package"); v != nullptr && !v->empty()) {
    o.package = *v;
  } else {
    throw Error("missing --package", "run: ditask --package ./libfoo.so --main entry --parallel-workers N");
  }
  if (const auto* v = get("main")) {
    o.main = *v;
  }
  if (const auto* v = get("parallel-workers")) {
    o.parallel_workers = to_integer("parallel-workers", *v);
    check_at_least("parallel-workers", static_cast<double>(o.parallel_workers), 1, "1");
    if (o.parallel_workers > kMaxLocalWorkers) {
      // Each worker's environment lists every peer: the plan grows with the square of N.
      throw Error("--parallel-workers must be at most " + std::to_string(kMaxLocalWorkers) + ", got " + *v,
                  "spread a larger job over several launchers (--world-size, --node-ids)");
    }
  }
  if (const auto* v = get("layout")) {
    apply_layout(o, *v, get("parallel-workers") != nullptr, get("world-size"), get("roles") != nullptr);
  }
  for (const char* name :
       {"protocol", "topology", "platform", "mq-type", "log-level", "send-policy", "status"}) {
    if (const auto* v = get(name)) {
      require_choice(name, *v);
    }
  }
  if (const auto* v = get("protocol")) {
    o.protocol = *v;
  }
  if (const auto* v = get("topology")) {
    o.topology = *v;
  }
  if (const auto* v = get("platform")) {
    o.platform = *v;  // its layers were read by resolve_options
  }
  if (const auto* v = get("rendezvous")) {
    check_rendezvous_url(*v);
    o.rendezvous = *v;
  }
  if (const auto* v = get("hosts-file")) {
    o.hosts_file = *v;
    o.hosts = read_hosts_file(*v);
  }
  if (const auto* v = get("mq-type")) {
    o.mq_type = *v;
  }
  if (const auto* v = get("platform-spec")) {
    parse_platform_spec(*v);  // a malformed spec is named first
    if (o.platform.empty()) {
      throw Error("--platform-spec needs --platform (slurm or k8s)", "without a platform, give the settings as flags");
    }
  }
  if (get("host-pattern") != nullptr && o.platform != "k8s") {
    throw Error("--host-pattern needs --platform k8s");
  }
  if (const auto* v = get("log-level")) {
    o.log_level = *v;
  }
  if (const auto* v = get("address"); v != nullptr) {
    if (v->empty()) {
      throw Error("--address must not be empty");
    }
    o.address = *v;
  }
  if (const auto* v = get("ports")) {
    o.ports = to_integer_list("ports", *v);
    for (auto port : o.ports) {
      if (port < 1 || port > 65535) {
        throw Error("--ports value " + std::to_string(port) + " is not a port (1-65535)");
      }
    }
    const auto n = static_cast<std::size_t>(o.parallel_workers);
    if (o.ports.size() == 1 && o.ports[0] + o.parallel_workers - 1 > 65535) {
      throw Error("--ports base " + std::to_string(o.ports[0]) + " leaves no room for " +
                      std::to_string(n) + " workers (the last would get port " +
                      std::to_string(o.ports[0] + o.parallel_workers - 1) + ")",
                  "choose a base port of at most " + std::to_string(65536 - o.parallel_workers));
    }
    if (o.ports.size() > 1 && o.ports.size() != n) {
      throw Error("--ports has " + std::to_string(o.ports.size()) + " ports for " + std::to_string(n) +
                      " workers",
                  "give one base port (worker i gets base+i) or exactly one port per worker");
    }
  }
  if (const auto* v = get("node-ids")) {
    o.node_ids = to_integer_list("node-ids", *v);
    const auto n = static_cast<std::size_t>(o.parallel_workers);
    if (o.node_ids.size() > 1 && o.node_ids.size() != n) {
      throw Error("--node-ids has " + std::to_string(o.node_ids.size()) + " ids for " +
                      std::to_string(n) + " workers",
                  "give one base id (worker i gets base+i) or exactly one id per worker");
    }
    std::set<std::int64_t> seen;
    for (auto id : o.node_ids) {
      if (id < 0) {
        throw Error("--node-ids value " + std::to_string(id) + " is negative");
      }
      if (!seen.insert(id).second) {
        throw Error("--node-ids lists node id " + std::to_string(id) + " twice", "node ids must be unique");
      }
    }
    // The largest id a worker gets (base+i for one base id), computed without overflow.
    const std::uint64_t last = o.node_ids.size() == 1 ? static_cast<std::uint64_t>(o.node_ids[0]) + n - 1
                                                      : static_cast<std::uint64_t>(*seen.rbegin());
    if (last > static_cast<std::uint64_t>(kMaxNodeId)) {
      throw Error("--node-ids " + *v + " gives node ids up to " + std::to_string(last) + ", above " +
                  std::to_string(kMaxNodeId) + " (2^53-1, the largest node id)");
    }
  }
  if (const auto* v = get("attach-to")) {
    o.attach_to = split_list(*v);
    check_attach_to(o.attach_to);
  }
  if (const auto* v = get("labels")) {
    o.labels = split_list(*v);
  }
  if (const auto* v = get("roles")) {
    o.roles = parse_roles(*v);
  }
  if (const auto* v = get("local_rank")) {
    to_integer("local_rank", *v);
  }
  struct Seconds {
    const char* name;
    double* field;
    double minimum;
  };
  for (auto [name, field, minimum] : {Seconds{"startup-interval", &o.startup_interval, 0},
                                      Seconds{"restart-backoff", &o.restart_backoff, 0},
                                      Seconds{"grace-period", &o.grace_period, 0},
                                      Seconds{"timeout", &o.timeout, 0}}) {
    if (const auto* v = get(name)) {
      *field = to_seconds(name, *v);
      check_at_least(name, *field, minimum, "0");
    }
  }
  if (const auto* v = get("auto-recover")) {
    o.auto_recover = to_bool("auto-recover", *v);
  }
  if (const auto* v = get("max-retries")) {
    o.max_retries = to_integer("max-retries", *v);
    check_at_least("max-retries", static_cast<double>(o.max_retries), 0, "0");
  }
  if (const auto* v = get("world-size")) {
    o.world_size = to_integer("world-size", *v);
    if (o.world_size < o.parallel_workers) {
      throw Error("--world-size " + *v + " is smaller than --parallel-workers " +
                  std::to_string(o.parallel_workers));
    }
  }
  if (const auto* v = get("log-dir")) {
    o.log_dir = *v;
  }
  if (const auto* v = get("summary-json")) {
    o.summary_json = *v;
  }
  if (const auto* v = get("status")) {
    o.status = *v;
  }
  if (const auto* v = get("trace")) {
    o.trace = *v;
  }
  if (const auto* v = get("metrics-dir")) {
    o.metrics_dir = *v;
  }
  if (const auto* v = get("tag-output")) {
    o.tag_output = to_bool("tag-output", *v);
  }
  if (const auto* v = get("tag-format")) {
    check_tag_format(*v);
    o.tag_format = *v;
  }
  if (const auto* v = get("dry-run")) {
    o.dry_run = to_bool("dry-run", *v);
  }
  if (!o.rendezvous.empty() && o.platform.empty()) {
    const auto size = std::to_string(o.world_size);
    const auto workers = std::to_string(o.parallel_workers);
    if (o.world_size <= 0) {
      throw Error("--rendezvous without --platform needs --world-size",
                  "the rendezvous waits for world size / parallel workers launchers; each launcher's rank is its "
                  "first --node-ids / --parallel-workers");
    }
    if (o.world_size <= o.parallel_workers) {
      throw Error("--rendezvous: --world-size " + size + " leaves no other launcher to meet (--parallel-workers " +
                      workers + ")",
                  "--world-size is the job's worker count over all its launchers");
    }
    if (o.world_size % o.parallel_workers != 0) {
      throw Error("--rendezvous: --world-size " + size + " is not a multiple of --parallel-workers " + workers,
                  "every launcher of a rendezvous runs --parallel-workers workers; it waits for world size / "
                  "parallel workers launchers");
    }
    const std::int64_t first = o.node_ids.empty() ? 0 : o.node_ids.front();
    const std::int64_t n = o.parallel_workers;
    if (first % n != 0) {
      const std::string block = "r*" + std::to_string(n) + " .. r*" + std::to_string(n) + "+" + std::to_string(n - 1);
      throw Error("--rendezvous: --node-ids starts at " + std::to_string(first) +
                      ", not at a multiple of --parallel-workers " + std::to_string(n),
                  "launcher r of the rendezvous runs node ids " + block + ": give --node-ids " +
                      std::to_string(first / n * n) + " or " + std::to_string((first / n + 1) * n));
    }
  }
  apply_mesh_values(values, o);
  apply_redis_values(values, o);
  return o;
}

}  // namespace ditask::launcher::detail
