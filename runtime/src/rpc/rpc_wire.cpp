// SPDX-License-Identifier: MIT
#include "rpc_wire.hpp"

#include <type_traits>
#include <vector>

#include "../codec/envelope.hpp"

namespace ditask::detail::rpc_wire {

RpcError::Kind kind_of(std::uint64_t status) {
  constexpr auto last = static_cast<std::uint64_t>(RpcError::Kind::stopped);
  if (status == 0 || status - 1 > last) {
    return RpcError::Kind::remote_exception;
  }
  return static_cast<RpcError::Kind>(status - 1);
}

namespace {

// Reads header values in order from the packed view, or from JSON when the event came so.
class HeaderReader {
 public:
  explicit HeaderReader(const RemoteEvent& e) {
    if (e.packed) {
      view_ = e.packed->view();
      p_ = view_.data;
    } else {
      json_ = &e.args->args;
    }
  }
  /// The next value as T (an unsigned integer, a string or bytes); false when it is not one.
  template <class T>
  bool next(T& out) {
    if (json_ != nullptr) {
      if (i_ >= json_->size()) {
        return false;
      }
      const json& value = (*json_)[i_];
      if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
        if (!value.is_binary()) {
          return false;
        }
        out.assign(value.get_binary().begin(), value.get_binary().end());
      } else if constexpr (std::is_same_v<T, std::string>) {
        if (!value.is_string()) {
          return false;
        }
        out = value.get<T>();
      } else {
        if (!value.is_number_unsigned()) {
          return false;
        }
        out = value.get<T>();
      }
      ++i_;
      return true;
    }
    return i_++ < view_.count && unpack_value(p_, view_.end, out);
  }
  /// The positional values not read yet (count 0 for JSON).
  PackedArgs rest() const noexcept {
    if (json_ != nullptr) {
      return PackedArgs{};
    }
    return PackedArgs{p_, view_.end, view_.count >= i_ ? view_.count - i_ : 0, view_.named_count};
  }

 private:
  PackedArgs view_;
  const std::uint8_t* p_ = nullptr;
  const json* json_ = nullptr;
  std::size_t i_ = 0;
};

}  // namespace

bool read_call_header(const RemoteEvent& e, CallHeader& out) {
  HeaderReader r(e);
  if (!(r.next(out.id) && r.next(out.function) && r.next(out.object) && r.next(out.context))) {
    return false;
  }
  out.rest = r.rest();
  return true;
}

bool read_reply_header(const RemoteEvent& e, ReplyHeader& out) {
  HeaderReader r(e);
  if (!(r.next(out.id) && r.next(out.status))) {
    return false;
  }
  out.rest = r.rest();
  return true;
}

EventArgs json_args_after(const RemoteEvent& e, std::size_t skip) { return drop_first_args(e.unpacked(), skip); }

EventArgs drop_first_args(EventArgs args, std::size_t skip) {
  auto& list = args.args;
  list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(std::min(skip, list.size())));
  return args;
}

RemoteEvent local_event(std::string event, const std::vector<std::uint8_t>& payload,
                        std::shared_ptr<const EventMeta> meta) {
  RemoteEvent e;
  e.event = std::move(event);
  e.packed = codec::locate_event_args(payload);
  if (e.packed) {
    e.packed->bytes = payload;
  } else {
    e.args = codec::decode_event_args(payload);
  }
  e.meta = std::move(meta);
  return e;
}

}  // namespace ditask::detail::rpc_wire
