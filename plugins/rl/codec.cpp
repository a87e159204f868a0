// SPDX-License-Identifier: MIT
#include "codec.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace rl {
namespace {

class Writer {
 public:
  explicit Writer(std::size_t reserve) { out_.reserve(reserve); }
  // Byte by byte: GCC 12's -Wstringop-overflow misreads a 4-byte insert under -fsanitize=thread.
  void magic(const char (&m)[5]) {
    for (int i = 0; i < 4; ++i) {
      out_.push_back(static_cast<std::uint8_t>(m[i]));
    }
  }
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
  }
  void f32(float v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    u32(bits);
  }
  void u64(std::uint64_t v) {
    u32(static_cast<std::uint32_t>(v));
    u32(static_cast<std::uint32_t>(v >> 32));
  }
  Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

class Reader {
 public:
  Reader(const Bytes& in, const char* what) : in_(in), what_(what) {}
  void magic(const char (&m)[5]) {
    need(4);
    if (std::memcmp(in_.data() + at_, m, 4) != 0) {
      fail("bad magic");
    }
    at_ += 4;
  }
  std::uint8_t u8() {
    need(1);
    return in_[at_++];
  }
  std::uint32_t u32() {
    need(4);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<std::uint32_t>(in_[at_++]) << (8 * i);
    }
    return v;
  }
  std::uint64_t u64() {
    const std::uint64_t low = u32();
    return low | (static_cast<std::uint64_t>(u32()) << 32);
  }
  float f32() {
    const std::uint32_t bits = u32();
    float v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  /// Checks that `count` items of `bytes_each` remain (before allocating for them).
  void expect(std::uint64_t count, std::uint64_t bytes_each) {
    if (count * bytes_each > in_.size() - at_) {
      fail("count " + std::to_string(count) + " does not fit in " + std::to_string(in_.size() - at_) + " bytes");
    }
  }
  void end() {
    if (at_ != in_.size()) {
      fail(std::to_string(in_.size() - at_) + " trailing bytes");
    }
  }

 private:
  void need(std::size_t n) {
    if (in_.size() - at_ < n) {
      fail("truncated");
    }
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(std::string("malformed ") + what_ + ": " + why);
  }
  const Bytes& in_;
  const char* what_;
  std::size_t at_ = 0;
};

void write_state(Writer& w, const std::array<float, 4>& s) {
  for (float v : s) {
    w.f32(v);
  }
}

std::array<float, 4> read_state(Reader& r) {
  std::array<float, 4> s{};
  for (auto& v : s) {
    v = r.f32();
  }
  return s;
}

}  // namespace

Bytes encode_weights(const Weights& w) {
  Writer out(12 + 4 * static_cast<std::size_t>(w.params.size()));
  out.magic("RLW1");
  out.u32(w.version);
  out.u32(static_cast<std::uint32_t>(w.params.size()));
  for (Eigen::Index i = 0; i < w.params.size(); ++i) {
    out.f32(w.params[i]);
  }
  return out.take();
}

Weights decode_weights(const Bytes& bytes) {
  Reader in(bytes, "weights");
  in.magic("RLW1");
  Weights w;
  w.version = in.u32();
  const std::uint32_t n = in.u32();
  in.expect(n, 4);
  w.params.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    w.params[i] = in.f32();
  }
  in.end();
  return w;
}

Bytes encode_trajectory(const Trajectory& t) {
  const std::size_t n = t.actions.size();
  if (t.states.size() != n || t.rewards.size() != n) {
    throw std::invalid_argument("a trajectory needs one state, action and reward per step");
  }
  Writer out(20 + n * 21);
  out.magic("RLT1");
  out.u32(t.version);
  out.u64(t.mask_seed);
  out.u32(static_cast<std::uint32_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    write_state(out, t.states[i]);
    out.u8(t.actions[i]);
  }
  for (float r : t.rewards) {
    out.f32(r);
  }
  return out.take();
}

Trajectory decode_trajectory(const Bytes& bytes) {
  Reader in(bytes, "trajectory");
  in.magic("RLT1");
  Trajectory t;
  t.version = in.u32();
  t.mask_seed = in.u64();
  const std::uint32_t n = in.u32();
  in.expect(n, 21);
  t.states.reserve(n);
  t.actions.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    t.states.push_back(read_state(in));
    t.actions.push_back(in.u8());
  }
  t.rewards.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    t.rewards.push_back(in.f32());
  }
  in.end();
  return t;
}

Bytes encode_transitions(std::uint32_t version, const std::vector<Transition>& ts) {
  Writer out(12 + ts.size() * 38);
  out.magic("RLX1");
  out.u32(version);
  out.u32(static_cast<std::uint32_t>(ts.size()));
  for (const auto& t : ts) {
    write_state(out, t.state);
    out.u8(t.action);
    out.f32(t.reward);
    write_state(out, t.next);
    out.u8(t.done ? 1 : 0);
  }
  return out.take();
}

std::vector<Transition> decode_transitions(const Bytes& bytes, std::uint32_t* version) {
  Reader in(bytes, "transitions");
  in.magic("RLX1");
  const std::uint32_t v = in.u32();
  if (version != nullptr) {
    *version = v;
  }
  const std::uint32_t n = in.u32();
  in.expect(n, 38);
  std::vector<Transition> ts(n);
  for (auto& t : ts) {
    t.state = read_state(in);
    t.action = in.u8();
    t.reward = in.f32();
    t.next = read_state(in);
    t.done = in.u8() != 0;
  }
  in.end();
  return ts;
}

}  // namespace rl
