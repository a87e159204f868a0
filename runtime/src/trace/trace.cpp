// SPDX-License-Identifier: MIT
#include "trace.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "ditask/runtime/write_all.hpp"

namespace ditask::detail::trace {

std::atomic<bool> g_on{false};

namespace {

constexpr std::size_t kRingRecords = 1 << 15;  // 1 MiB per thread: 250 ms of a busy thread
// The last records of a ring are kept for span ends: a span whose begin was recorded gets its end
// (unless 4,096 spans are open on one thread), so the spans of a trace stay balanced.
constexpr std::size_t kEndReserve = 4096;
constexpr auto kFlushEvery = std::chrono::milliseconds(250);

/// One thread's records: written by that thread only, read by the flusher only.
struct Ring {
  std::array<Record, kRingRecords> slots;
  std::atomic<std::uint64_t> head{0};  // next to write (the owner)
  std::atomic<std::uint64_t> tail{0};  // next to read (the flusher)
  std::atomic<std::uint64_t> dropped{0};
  std::uint32_t tid = 0;
  std::string name = "thread";     // guarded by g_registry_mutex
  bool name_told = false;          // the part has `name`; guarded by g_registry_mutex
  std::uint64_t dropped_told = 0;  // flusher only
};

std::mutex g_registry_mutex;
std::vector<std::shared_ptr<Ring>> g_rings;  // guarded by g_registry_mutex
thread_local std::shared_ptr<Ring> t_ring;

std::mutex g_names_mutex;
std::deque<std::string> g_names;                            // by id; guarded by g_names_mutex
std::unordered_map<std::string, std::uint32_t> g_name_ids;  // guarded by g_names_mutex

struct TransparentHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};
thread_local std::unordered_map<std::string, std::uint32_t, TransparentHash, std::equal_to<>>
    t_name_ids;

std::uint64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);  // one clock for every worker and host of the job
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

Ring& this_ring() {
  if (!t_ring) {
    auto ring = std::make_shared<Ring>();
    std::lock_guard lock(g_registry_mutex);
    ring->tid = static_cast<std::uint32_t>(g_rings.size() + 1);
    g_rings.push_back(ring);
    t_ring = std::move(ring);
  }
  return *t_ring;
}

/// The flusher's output: the part file and what of the names it holds. Guarded by g_flush_mutex.
std::mutex g_flush_mutex;
int g_fd = -1;
std::size_t g_names_written = 0;
std::string g_out;  // one drain's blocks, written with one write(2)

void append_block(BlockKind kind, std::uint32_t a, std::uint64_t b, const void* payload,
                  std::size_t bytes) {
  const BlockHead head{kind, a, b};
  g_out.append(reinterpret_cast<const char*>(&head), sizeof head);
  g_out.append(static_cast<const char*>(payload), bytes);
}

void drain_locked() {
  if (g_fd < 0) {
    return;
  }
  g_out.clear();
  std::vector<std::shared_ptr<Ring>> rings;
  {
    std::lock_guard lock(g_registry_mutex);
    // A drained ring of a thread that ended goes (its thread's shared_ptr is gone).
    std::erase_if(g_rings, [](const std::shared_ptr<Ring>& ring) {
      return ring.use_count() == 1 && ring->name_told &&
             ring->tail.load(std::memory_order_relaxed) ==
                 ring->head.load(std::memory_order_acquire) &&
             ring->dropped_told == ring->dropped.load(std::memory_order_relaxed);
    });
    rings = g_rings;
    for (auto& ring : rings) {
      if (!ring->name_told) {  // named since the last drain, or never told
        ring->name_told = true;
        append_block(BlockKind::thread, ring->tid, ring->name.size(), ring->name.data(),
                     ring->name.size());
      }
    }
  }
  // The heads first, then the names: every record up to a head has its name in the part.
  std::vector<std::uint64_t> ends;
  ends.reserve(rings.size());
  for (auto& ring : rings) {
    ends.push_back(ring->head.load(std::memory_order_acquire));
  }
  {
    std::lock_guard lock(g_names_mutex);
    for (; g_names_written < g_names.size(); ++g_names_written) {
      const std::string& name = g_names[g_names_written];
      append_block(BlockKind::names, static_cast<std::uint32_t>(g_names_written), name.size(),
                   name.data(), name.size());
    }
  }
  for (std::size_t r = 0; r < rings.size(); ++r) {
    Ring& ring = *rings[r];
    const std::uint64_t from = ring.tail.load(std::memory_order_relaxed);
    if (from != ends[r]) {
      // At most two slices: up to the ring's end, then from its start.
      const std::uint64_t first =
          std::min<std::uint64_t>(ends[r] - from, kRingRecords - from % kRingRecords);
      append_block(BlockKind::records, ring.tid, ends[r] - from, &ring.slots[from % kRingRecords],
                   first * sizeof(Record));
      g_out.append(reinterpret_cast<const char*>(ring.slots.data()),
                   (ends[r] - from - first) * sizeof(Record));
      ring.tail.store(ends[r], std::memory_order_release);
    }
    const std::uint64_t dropped = ring.dropped.load(std::memory_order_relaxed);
    if (dropped != ring.dropped_told) {
      const std::uint64_t told_at = now_ns();
      append_block(BlockKind::dropped, ring.tid, dropped - ring.dropped_told, &told_at,
                   sizeof told_at);
      ring.dropped_told = dropped;
    }
  }
  write_all(g_fd, g_out);
}

}  // namespace

std::uint32_t name_id(std::string_view name) {
  if (auto it = t_name_ids.find(name); it != t_name_ids.end()) {
    return it->second;
  }
  std::uint32_t id = 0;
  {
    std::lock_guard lock(g_names_mutex);
    auto [it, added] =
        g_name_ids.emplace(std::string(name), static_cast<std::uint32_t>(g_names.size()));
    if (added) {
      g_names.emplace_back(name);
    }
    id = it->second;
  }
  t_name_ids.emplace(std::string(name), id);
  return id;
}

namespace {

/// True when this thread's ring has room for `n` records of `phase` (a span's end may use the
/// reserve).
bool room(Ring& ring, Phase phase, std::uint64_t n = 1) noexcept {
  const std::uint64_t used =
      ring.head.load(std::memory_order_relaxed) - ring.tail.load(std::memory_order_acquire);
  return used + n <= (phase == Phase::end ? kRingRecords : kRingRecords - kEndReserve);
}

void push(Ring& ring, const Record& r) noexcept {
  const std::uint64_t h = ring.head.load(std::memory_order_relaxed);
  ring.slots[h % kRingRecords] = r;
  ring.head.store(h + 1, std::memory_order_release);
}

/// The id of "call", the name of every arrow from a caller to its callee.
std::uint32_t call_name() {
  static const std::uint32_t id = name_id("call");
  return id;
}

/// Records one event whose name id `name_of()` gives, looked up only when the ring has room.
template <typename NameOf>
void record_if_room(Phase phase, Category category, NameOf name_of, std::uint64_t id,
                    std::int64_t arg) noexcept {
  try {
    Ring& ring = this_ring();
    if (!room(ring, phase)) {
      ring.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    push(ring, Record{now_ns(), id, arg, name_of(), phase, category, {}});
  } catch (...) {
    // A thread's first record allocates its ring, a new name its entry: without memory, the
    // record is lost.
  }
}

}  // namespace

void record(Phase phase, Category category, std::uint32_t name, std::uint64_t id,
            std::int64_t arg) noexcept {
  record_if_room(
      phase, category, [name] { return name; }, id, arg);
}

void record(Phase phase, Category category, std::string_view name, std::uint64_t id,
            std::int64_t arg) noexcept {
  record_if_room(
      phase, category, [name] { return name_id(name); }, id, arg);
}

void name_thread(std::string_view name) noexcept {
  if (!on()) {
    return;
  }
  try {
    Ring& ring = this_ring();
    std::lock_guard lock(g_registry_mutex);
    ring.name = std::string(name);
    ring.name_told = false;
  } catch (...) {
    // Without memory the track keeps its number for a name.
  }
}

void record_call_start(std::string_view function, std::uint64_t id, std::int64_t callee) noexcept {
  try {
    Ring& ring = this_ring();
    if (!room(ring, Phase::async_begin, 2)) {
      ring.dropped.fetch_add(2, std::memory_order_relaxed);
      return;
    }
    const std::uint64_t ts = now_ns();
    push(ring, Record{ts, id, callee, name_id(function), Phase::async_begin, Category::rpc, {}});
    push(ring, Record{ts, id, callee, call_name(), Phase::flow_start, Category::rpc, {}});
  } catch (...) {
    // Without memory for a new name the call goes unrecorded.
  }
}

Span::Span(Category category, std::string_view name, std::int64_t arg) noexcept
    : active_(on()), category_(category) {
  if (active_) {
    begin(name, arg, nullptr);
  }
}

Span::Span(Category category, std::string_view name, std::int64_t arg,
           std::uint64_t flow_in) noexcept
    : active_(on()), category_(category) {
  if (active_) {
    begin(name, arg, &flow_in);
  }
}

void Span::begin(std::string_view name, std::int64_t arg, const std::uint64_t* flow_in) noexcept {
  try {
    Ring& ring = this_ring();
    const std::uint64_t n = flow_in != nullptr ? 2 : 1;
    if (!room(ring, Phase::begin, n)) {  // no begin, so no end either: the spans stay balanced
      ring.dropped.fetch_add(n + 1, std::memory_order_relaxed);
      active_ = false;
      return;
    }
    name_ = name_id(name);
    const std::uint64_t ts = now_ns();
    push(ring, Record{ts, 0, arg, name_, Phase::begin, category_, {}});
    if (flow_in != nullptr) {
      push(ring, Record{ts, *flow_in, arg, call_name(), Phase::flow_end, category_, {}});
    }
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
    // Close-on-exec: not inherited by what the module starts.
    g_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (g_fd < 0) {
      return;  // the launcher's merge finds no records of this attempt
    }
    struct stat st {};
    if (::fstat(g_fd, &st) == 0 && st.st_size == 0) {
      write_all(g_fd, kPartMagic);
    }
    g_names_written = 0;
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
    // forget what they held and are named again in the new part.
    std::lock_guard lock(g_registry_mutex);
    std::erase_if(g_rings, [](const std::shared_ptr<Ring>& ring) { return ring.use_count() == 1; });
    for (auto& ring : g_rings) {
      ring->name_told = false;
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
  ::close(g_fd);
  g_fd = -1;
}

void flush_now() noexcept {
  try {
    std::lock_guard lock(g_flush_mutex);
    drain_locked();
  } catch (...) {
  }
}

}  // namespace ditask::detail::trace
