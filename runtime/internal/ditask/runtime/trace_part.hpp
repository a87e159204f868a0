// SPDX-License-Identifier: MIT
// The file a worker's `--trace` recorder writes (DITASK_TRACE_FILE, one per attempt) and the
// launcher reads after the job: raw records, not JSON, so the worker's flusher only copies bytes
// while the job runs and the formatting is done once, by the launcher, at the end.
//
// Layout (native byte order: the part never leaves the host of the worker that wrote it):
//   "DTRACE01", then blocks, each a BlockHead and its payload:
//   names    a = name id,  b = bytes of the name, then the name
//   thread   a = thread,   b = bytes of its track's name, then the name (the last one given wins)
//   records  a = thread,   b = records, then b Records of 32 bytes
//   dropped  a = thread,   b = records a full ring dropped, then the time (ns) it was told
// A crash may cut the last block: its whole records are kept, the rest is left out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ditask::detail::trace {

/// What a record is, as Chrome's trace-event format names it ("ph").
enum class Phase : std::uint8_t {
  begin,
  end,
  instant,
  async_begin,
  async_end,
  flow_start,
  flow_end
};

/// The record's category ("cat"), one per runtime layer.
enum class Category : std::uint8_t { task, event, rpc, group, mesh };

/// One span end, instant, async half or flow end, as a ring holds it and a part stores it.
struct Record {
  std::uint64_t ts_ns;  // CLOCK_REALTIME: one clock for every worker and host of a job
  std::uint64_t id;     // pairs async and flow records
  std::int64_t arg;     // the peer node (sender, callee, caller) or -1
  std::uint32_t name;   // an id of a names block
  Phase phase;
  Category category;
  std::uint8_t unused[2];
};
static_assert(sizeof(Record) == 32);

/// A part's first bytes.
inline constexpr std::string_view kPartMagic = "DTRACE01";

/// The kinds of a part's blocks.
enum class BlockKind : std::uint32_t { names = 1, thread = 2, records = 3, dropped = 4 };

/// The head of each block of a part.
struct BlockHead {
  BlockKind kind;
  std::uint32_t a;
  std::uint64_t b;
};
static_assert(sizeof(BlockHead) == 16);

/// Where a part's records go in the merged trace.
struct PartPlacement {
  std::int64_t pid = 0;        // the process track: the worker's node id
  std::int64_t first_tid = 1;  // the part's threads become first_tid, first_tid + 1, ...
  std::string thread_suffix;   // appended to each thread's name (" (attempt 1)")
};

/// Passes every record of the part at `path` to `put` as one Chrome trace-event JSON object (no
/// separator, no newline), then one "thread_name" metadata object per thread; a full ring's
/// dropped records become a "ring full: N records dropped" instant. Returns the next free thread
/// id. A missing or unreadable part gives nothing; a part that is not one (no magic) gives
/// nothing. Errors: what `put` throws.
std::int64_t part_to_json(const std::string& path, const PartPlacement& placement,
                          const std::function<void(const std::string&)>& put);

}  // namespace ditask::detail::trace
