// SPDX-License-Identifier: MIT
#include "trace.hpp"

#include <time.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ditask::detail::trace {

std::atomic<bool> g_on{false};

namespace {

constexpr std::size_t kRingRecords = 1 << 15;  // 1 MiB per thread: 250 ms of a busy thread
// The last records of a ring are kept for span ends: a span whose begin was recorded gets its end
// (unless 4,096 spans are open on one thread), so the spans of a trace stay balanced.
constexpr std::size_t kEndReserve = 4096;
constexpr auto kFlushEvery = std::chrono::milliseconds(250);

struct Record {
  std::uint64_t ts_ns;
  std::uint64_t id;
  std::int64_t arg;
  std::uint32_t name;
  Phase phase;
  Category category;
};

/// One thread's records: written by that thread only, read by the flusher only.
struct Ring {
  std::array<Record, kRingRecords> slots;
  std::atomic<std::uint64_t> head{0};  // next to write (the owner)
  std::atomic<std::uint64_t> tail{0};  // next to read (the flusher)
  std::atomic<std::uint64_t> dropped{0};
  std::uint32_t tid = 0;
  std::string name;        // guarded by g_registry_mutex
  bool announced = false;  // its thread_name line was written (flusher only)
  std::uint64_t dropped_told = 0;  // flusher only
};

std::mutex g_registry_mutex;
std::vector<std::shared_ptr<Ring>> g_rings;  // guarded by g_registry_mutex
thread_local std::shared_ptr<Ring> t_ring;

std::mutex g_names_mutex;
std::deque<std::string> g_names;                               // by id; guarded by g_names_mutex
std::unordered_map<std::string, std::uint32_t> g_name_ids;      // guarded by g_names_mutex

struct TransparentHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
thread_local std::unordered_map<std::string, std::uint32_t, TransparentHash, std::equal_to<>> t_name_ids;

std::uint64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);  // one clock for every worker and host of the job
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

Ring& this_ring() {
  if (!t_ring) {
    auto ring = std::make_shared<Ring>();
    std::lock_guard lock(g_registry_mutex);
    ring->tid = static_cast<std::uint32_t>(g_rings.size() + 1);
    ring->name = "thread " + std::to_string(ring->tid);
    g_rings.push_back(ring);
    t_ring = std::move(ring);
  }
  return *t_ring;
}

/// The flusher's output: the part file, this worker's pid and tid base. Guarded by g_flush_mutex.
std::mutex g_flush_mutex;
std::FILE* g_file = nullptr;
std::int64_t g_pid = 0;
std::uint32_t g_tid_base = 0;
std::vector<std::string> g_flusher_names;  // the flusher's copy of g_names

const char* phase_text(Phase p) {
  switch (p) {
    case Phase::begin: return "B";
    case Phase::end: return "E";
    case Phase::instant: return "i";
    case Phase::async_begin: return "b";
    case Phase::async_end: return "e";
    case Phase::flow_start: return "s";
    case Phase::flow_end: return "f";
  }
  return "i";
}

const char* category_text(Category c) {
  switch (c) {
    case Category::task: return "task";
    case Category::event: return "event";
    case Category::rpc: return "rpc";
    case Category::group: return "group";
    case Category::mesh: return "mesh";
  }
  return "task";
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}


void write_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), g_file);
  std::fputc('\n', g_file);
}

std::string g_line;  // the flusher's line buffer, reused (guarded by g_flush_mutex)

void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

void append_head(std::string& out, const char* ph, std::uint32_t tid, std::uint64_t ts) {
  out += "{\"ph\":\"";
  out += ph;
  out += "\",\"pid\":";
  if (g_pid < 0) {
    out += '-';
  }
  append_number(out, static_cast<std::uint64_t>(g_pid < 0 ? -g_pid : g_pid));
  out += ",\"tid\":";
  append_number(out, g_tid_base + tid);
  out += ",\"ts\":";
  append_number(out, ts / 1000);  // microseconds, three decimals
  out += '.';
  const auto fraction = ts % 1000;
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
}

std::string head(const char* ph, std::uint32_t tid, std::uint64_t ts) {
  std::string out;
  append_head(out, ph, tid, ts);
  return out;
}

void write_record(const Record& r, std::uint32_t tid) {
  // g_flusher_names holds each name already as a JSON string.
  const std::string& name = r.name < g_flusher_names.size() ? g_flusher_names[r.name] : g_flusher_names.front();
  std::string& line = g_line;
  line.clear();
  append_head(line, phase_text(r.phase), tid, r.ts_ns);
  if (r.phase != Phase::end) {
    line += ",\"cat\":\"";
    line += category_text(r.category);
    line += "\",\"name\":";
    line += name;
  }
  switch (r.phase) {
    case Phase::instant:
      line += ",\"s\":\"t\"";
      break;
    case Phase::async_begin:
    case Phase::async_end:
    case Phase::flow_start:
    case Phase::flow_end: {
      char hex[24];
      const auto end = std::to_chars(hex, hex + sizeof hex, r.id, 16).ptr;
      line += ",\"id\":\"0x";
      line.append(hex, end);
      line += '"';
      if (r.phase == Phase::flow_end) {
        line += ",\"bp\":\"e\"";  // bound to the slice that encloses it: the served call
      }
      break;
    }
    default:
      break;
  }
  if (r.arg >= 0 && r.phase != Phase::end) {
    line += ",\"args\":{\"peer\":";
    append_number(line, static_cast<std::uint64_t>(r.arg));
    line += '}';
  }
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), g_file);
}

void drain_locked() {
  if (g_file == nullptr) {
    return;
  }
  std::vector<std::shared_ptr<Ring>> rings;
  {
    std::lock_guard lock(g_registry_mutex);
    // A drained ring of a thread that ended goes (its thread's shared_ptr is gone).
    std::erase_if(g_rings, [](const std::shared_ptr<Ring>& ring) {
      return ring.use_count() == 1 && ring->announced &&
             ring->tail.load(std::memory_order_relaxed) == ring->head.load(std::memory_order_acquire) &&
             ring->dropped_told == ring->dropped.load(std::memory_order_relaxed);
    });
    rings = g_rings;
    for (auto& ring : rings) {
      if (!ring->announced) {
        ring->announced = true;
        write_line(head("M", ring->tid, 0) + ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_string(ring->name) + "}}");
      }
    }
  }
  // The heads first, then the names: every record up to a head has its name in the copy.
  std::vector<std::uint64_t> ends;
  ends.reserve(rings.size());
  for (auto& ring : rings) {
    ends.push_back(ring->head.load(std::memory_order_acquire));
  }
  {
    std::lock_guard lock(g_names_mutex);
    for (std::size_t i = g_flusher_names.size(); i < g_names.size(); ++i) {
      g_flusher_names.push_back(json_string(g_names[i]));  // escaped once, not per record
    }
  }
  for (std::size_t r = 0; r < rings.size(); ++r) {
    Ring& ring = *rings[r];
    std::uint64_t at = ring.tail.load(std::memory_order_relaxed);
    for (; at < ends[r]; ++at) {
      write_record(ring.slots[at % kRingRecords], ring.tid);
    }
    ring.tail.store(at, std::memory_order_release);
    const std::uint64_t dropped = ring.dropped.load(std::memory_order_relaxed);
    if (dropped != ring.dropped_told) {
      write_line(head("i", ring.tid, now_ns()) + ",\"cat\":\"trace\",\"s\":\"t\",\"name\":\"ring full: " +
                 std::to_string(dropped - ring.dropped_told) + " records dropped\"}");
      ring.dropped_told = dropped;
    }
  }
  std::fflush(g_file);
}

}  // namespace

std::uint32_t name_id(std::string_view name) {
  if (auto it = t_name_ids.find(name); it != t_name_ids.end()) {
    return it->second;
  }
  std::uint32_t id = 0;
  {
    std::lock_guard lock(g_names_mutex);
    auto [it, added] = g_name_ids.emplace(std::string(name), static_cast<std::uint32_t>(g_names.size()));
    if (added) {
      g_names.emplace_back(name);
    }
    id = it->second;
  }
  t_name_ids.emplace(std::string(name), id);
  return id;
}

namespace {

/// True when this thread's ring has room for a record of `phase` (a span's end may use the reserve).
bool room(Ring& ring, Phase phase) noexcept {
  const std::uint64_t used = ring.head.load(std::memory_order_relaxed) - ring.tail.load(std::memory_order_acquire);
  return used < (phase == Phase::end ? kRingRecords : kRingRecords - kEndReserve);
}

void push(Ring& ring, const Record& r) noexcept {
  const std::uint64_t h = ring.head.load(std::memory_order_relaxed);
  ring.slots[h % kRingRecords] = r;
  ring.head.store(h + 1, std::memory_order_release);
}

}  // namespace

void record(Phase phase, Category category, std::uint32_t name, std::uint64_t id, std::int64_t arg) noexcept {
  try {
    Ring& ring = this_ring();
    if (!room(ring, phase)) {
      ring.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    push(ring, Record{now_ns(), id, arg, name, phase, category});
  } catch (...) {
    // A thread's first record allocates its ring: without memory, the record is lost.
  }
}

void record(Phase phase, Category category, std::string_view name, std::uint64_t id, std::int64_t arg) noexcept {
  try {
    Ring& ring = this_ring();
    if (!room(ring, phase)) {
      ring.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    push(ring, Record{now_ns(), id, arg, name_id(name), phase, category});
  } catch (...) {
  }
}

void name_thread(std::string_view name) noexcept {
  if (!on()) {
    return;
  }
  try {
    Ring& ring = this_ring();
    std::lock_guard lock(g_registry_mutex);
    ring.name = std::string(name) + " " + std::to_string(ring.tid);
  } catch (...) {
    // Without memory the track keeps its number for a name.
  }
}

Span::Span(Category category, std::string_view name, std::int64_t arg) noexcept : active_(on()), category_(category) {
  if (!active_) {
    return;
  }
  try {
    Ring& ring = this_ring();
    if (!room(ring, Phase::begin)) {  // no begin, so no end either: the spans stay balanced
      ring.dropped.fetch_add(2, std::memory_order_relaxed);
      active_ = false;
      return;
    }
    name_ = name_id(name);
    push(ring, Record{now_ns(), 0, arg, name_, Phase::begin, category_});
  } catch (...) {
    active_ = false;
  }
}

Span::~Span() {
  if (active_) {
    record(Phase::end, category_, name_);
  }
}

Session::Session() {
  const char* path = std::getenv("DITASK_TRACE_FILE");
  if (path == nullptr || *path == '\0') {
    return;
  }
  {
    std::lock_guard lock(g_flush_mutex);
    g_file = std::fopen(path, "ae");  // close-on-exec: not inherited by what the module starts
    if (g_file == nullptr) {
      return;  // the launcher's merge says the node's part is missing
    }
    const char* node = std::getenv("DITASK_NODE_ID");
    const char* attempt = std::getenv("DITASK_ATTEMPT");
    g_pid = node != nullptr ? std::atoll(node) : 0;
    g_tid_base = attempt != nullptr ? static_cast<std::uint32_t>(std::atoi(attempt)) * 1000u : 0u;
    {
      std::lock_guard names(g_names_mutex);
      if (g_names.empty()) {
        g_names.emplace_back("?");
        g_name_ids.emplace("?", 0);
      }
    }
  }
  {
    // A second session in one process (tests) starts clean: rings of ended threads go, the others
    // forget what they held and are announced again in the new part.
    std::lock_guard lock(g_registry_mutex);
    std::erase_if(g_rings, [](const std::shared_ptr<Ring>& ring) { return ring.use_count() == 1; });
    for (auto& ring : g_rings) {
      ring->announced = false;
      ring->tail.store(ring->head.load());
      ring->dropped_told = ring->dropped.load();
    }
  }
  g_on.store(true);
  name_thread("entry");
  flusher_ = std::make_unique<PeriodicThread>(kFlushEvery, [] { flush_now(); });
}

Session::~Session() {
  if (!flusher_) {
    return;
  }
  flusher_.reset();  // joined: the last drain below is the only one
  g_on.store(false);
  std::lock_guard lock(g_flush_mutex);
  drain_locked();
  std::fclose(g_file);
  g_file = nullptr;
}

void flush_now() noexcept {
  try {
    std::lock_guard lock(g_flush_mutex);
    drain_locked();
  } catch (...) {
  }
}

}  // namespace ditask::detail::trace
