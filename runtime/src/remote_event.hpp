// SPDX-License-Identifier: MIT
// An event that came from a peer, on its way from the mesh to the task's dispatcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/export.hpp"
#include "ditask/detail/packed_args.hpp"
#include "large_buffers.hpp"

namespace ditask::detail {

/// Told once per remote event when its handlers ran or it was dropped (acknowledgements and
/// flow control). Thread: the dispatcher thread (or whoever drops the event).
class Receipt {
 public:
  virtual ~Receipt() = default;
  /// `handled`: at least one handler saw it.
  virtual void done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept = 0;
  /// done(seq, ..., true) for every seq from `first` to `last` (a run of this receipt's events,
  /// all handled), `bytes` their sum. The default tells them one by one.
  virtual void done_run(std::uint64_t first, std::uint64_t last, std::size_t bytes) noexcept {
    for (std::uint64_t seq = first; seq < last; ++seq) {
      done(seq, 0, true);
    }
    done(last, bytes, true);
  }
};

/// Tells receipts in runs: consecutive handled events of one receipt, numbered one after the
/// other, become one done_run() (one lock and one flow-control update, not one per event). At
/// most kMaxRun events or about kMaxRunBytes wait in a run (what a paused read could wait for);
/// flush() (and the destructor) tells what is held. Thread: one owner.
class ReceiptRun {
 public:
  static constexpr std::size_t kMaxRun = 64;
  static constexpr std::size_t kMaxRunBytes = 64 * 1024;
  ReceiptRun() = default;
  ReceiptRun(const ReceiptRun&) = delete;
  ReceiptRun& operator=(const ReceiptRun&) = delete;
  ~ReceiptRun() { flush(); }
  /// `receipt`->done(seq, bytes, handled), now or with the run it continues.
  void add(const std::shared_ptr<Receipt>& receipt, std::uint64_t seq, std::size_t bytes, bool handled) noexcept {
    if (!receipt) {
      return;
    }
    if (handled && receipt == receipt_ && seq == last_ + 1 && count_ < kMaxRun && bytes_ < kMaxRunBytes) {
      last_ = seq;
      bytes_ += bytes;
      ++count_;
      return;
    }
    flush();
    if (!handled) {
      receipt->done(seq, bytes, false);
      return;
    }
    receipt_ = receipt;
    first_ = last_ = seq;
    bytes_ = bytes;
    count_ = 1;
  }
  /// Tells the run held, if any.
  void flush() noexcept {
    if (receipt_) {
      receipt_->done_run(first_, last_, bytes_);
      receipt_.reset();
    }
  }

 private:
  std::shared_ptr<Receipt> receipt_;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
  std::size_t bytes_ = 0;
  std::size_t count_ = 0;
};

/// An event's arguments as they came off the wire: the MessagePack payload (checked to be
/// well-formed) and where its positional arguments lie, so a typed handler reads them without a
/// JSON value being built.
struct PackedPayload {
  PackedPayload() = default;
  PackedPayload(const PackedPayload&) = default;
  PackedPayload(PackedPayload&&) noexcept = default;
  PackedPayload& operator=(const PackedPayload&) = default;
  PackedPayload& operator=(PackedPayload&&) noexcept = default;
  /// Keeps a large `bytes` buffer for the next large payload read (large_buffers.hpp).
  ~PackedPayload() { recycle_large_buffer(std::move(bytes)); }

  std::vector<std::uint8_t> bytes;  ///< the payload, unless `shared` holds it
  /// A small payload in a buffer shared with the other small events of one read (no allocation
  /// per event); it lives as long as any of them.
  std::shared_ptr<const std::uint8_t> shared;
  std::size_t shared_size = 0;
  std::size_t args_begin = 0;  ///< offset of the first positional argument
  std::size_t args_end = 0;    ///< offset just past the last one
  std::size_t count = 0;       ///< positional arguments
  std::size_t named_count = 0; ///< named arguments

  /// The payload's bytes.
  std::span<const std::uint8_t> data() const noexcept {
    return shared ? std::span<const std::uint8_t>(shared.get(), shared_size) : std::span<const std::uint8_t>(bytes);
  }
  /// Copies a shared payload into `bytes` of its own (for what is kept for long: the shared
  /// buffer would stay alive with it).
  void own() {
    if (shared) {
      bytes.assign(shared.get(), shared.get() + shared_size);
      shared.reset();
      shared_size = 0;
    }
  }
  /// A view for a typed handler's fast path.
  PackedArgs view() const noexcept {
    const std::uint8_t* p = data().data();
    return PackedArgs{p + args_begin, p + args_end, count, named_count};
  }
  /// The arguments as JSON. Errors: ditask::Error (never for a payload the mesh accepted).
  EventArgs unpack() const;
};

struct HandlerEntry;
struct KeptMark;

/// One remote event (or a runtime notice such as peer_joined, which has no receipt, or a local
/// event). Exactly one of `args` and `packed` is set. Built by a transport (or the bus, for a local
/// event) and queued by the event bus as it is (bus_job.hpp), so that a read's events reach the
/// dispatcher without being built a second time.
struct RemoteEvent {
  // User-provided, so that an event made in place (emplace_back()) is not first zeroed whole
  // (value-initialisation of a class without one zeroes every byte, then runs the initialisers).
  RemoteEvent() noexcept {}  // NOLINT(modernize-use-equals-default)
  std::string event;
  std::optional<EventArgs> args;
  std::optional<PackedPayload> packed;
  std::shared_ptr<Receipt> receipt;
  std::shared_ptr<const EventMeta> meta;  ///< its sender; null for a runtime notice (then local)
  bool relayed = false;  ///< a star hub relayed it for its sender (who is not the hub)
  bool notice = false;  ///< a runtime notice about membership (peer_joined, peer_left), not an event a peer sent
  std::uint64_t seq = 0;
  std::size_t bytes = 0;
  // The event bus's own, set when it is queued.
  std::uint64_t order = 0;             ///< position in the bus's queue (1, 2, ...)
  std::shared_ptr<HandlerEntry> only;  ///< a replay of a kept event for this handler alone
  std::shared_ptr<KeptMark> mark;      ///< set for events kept by the startup window

  /// The arguments as JSON, decoded from `packed` when that is how they came.
  EventArgs unpacked() const { return args ? *args : packed->unpack(); }
};

}  // namespace ditask::detail
