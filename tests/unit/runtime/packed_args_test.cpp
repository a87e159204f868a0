// SPDX-License-Identifier: MIT
// The fast path for simple event arguments: what pack_event writes is what the JSON path would
// send, a typed handler reads the same values from it as through JSON, and anything it cannot
// read exactly is left to the JSON path.
#include "event_bus.hpp"
#include "mesh/frame.hpp"
#include "codec/envelope.hpp"
#include "codec/json_msgpack.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
namespace codec = ditask::detail::codec;
using Bytes = std::vector<std::uint8_t>;
using ditask::json;

namespace {

template <class... A>
Bytes packed(const A&... values) {
  Bytes out;
  ditask::detail::pack_event(out, values...);
  return out;
}

// The packed bytes decode (with our reader and with nlohmann's) to what EventArgs::from holds.
template <class... A>
void check_same_as_json(const A&... values) {
  const Bytes wire = packed(values...);
  const auto expected = ditask::EventArgs::from(values...);
  const auto decoded = codec::decode_event_args(wire);
  INFO(expected.args.dump() << " vs " << decoded.args.dump());
  CHECK(decoded.args == expected.args);
  CHECK(decoded.kwargs == expected.kwargs);
  CHECK(json::from_msgpack(wire)["a"] == expected.args);
}

// Reads the single argument of pack_event(value) as T through the fast path.
template <class T, class V>
bool fast_read(const V& value, T& out) {
  const Bytes wire = packed(value);
  const auto layout = codec::locate_event_args(wire);
  REQUIRE(layout);
  const std::uint8_t* p = wire.data() + layout->args_begin;
  const bool ok = ditask::detail::unpack_value(p, wire.data() + layout->args_end, out);
  if (ok) {
    CHECK(p == wire.data() + layout->args_end);
  }
  return ok;
}

}  // namespace

TEST_CASE("packed_args: pack_event writes what the JSON path sends, at every size boundary", "[packed]") {
  using I64 = std::numeric_limits<std::int64_t>;
  for (std::int64_t v : {std::int64_t{0}, std::int64_t{127}, std::int64_t{128}, std::int64_t{255},
                         std::int64_t{256}, std::int64_t{65535}, std::int64_t{65536}, std::int64_t{4294967295},
                         std::int64_t{4294967296}, I64::max(), std::int64_t{-1}, std::int64_t{-32},
                         std::int64_t{-33}, std::int64_t{-128}, std::int64_t{-129}, std::int64_t{-32768},
                         std::int64_t{-32769}, std::int64_t{-2147483648LL}, std::int64_t{-2147483649LL},
                         I64::min()}) {
    check_same_as_json(v);
  }
  check_same_as_json(std::numeric_limits<std::uint64_t>::max());
  check_same_as_json(std::uint8_t{200}, std::int16_t{-300}, 'x', true, false);
  check_same_as_json(1.5, -0.25f, 1e300, std::numeric_limits<double>::infinity());
  for (std::size_t n : {0UL, 31UL, 32UL, 255UL, 256UL, 65535UL, 65536UL}) {
    check_same_as_json(std::string(n, 's'), Bytes(n, 0xab));
  }
  check_same_as_json("literal", std::string_view("view"), static_cast<const char*>("pointer"));
  check_same_as_json();
}

TEST_CASE("packed_args: locate_event_args finds the positional arguments of both encoders", "[packed]") {
  const Bytes fast = packed(std::int64_t{7}, std::string("x"));
  const auto a = codec::locate_event_args(fast);
  REQUIRE(a);
  CHECK(a->count == 2);
  CHECK(a->named_count == 0);
  CHECK(a->args_begin == 4);
  CHECK(a->args_end == fast.size() - 3);

  const auto with_kw = codec::encode_event_args(ditask::EventArgs::from(1, ditask::kw("k1", 2), ditask::kw("k2", 3)));
  const auto b = codec::locate_event_args(with_kw);
  REQUIRE(b);
  CHECK(b->count == 1);
  CHECK(b->named_count == 2);

  SECTION("15 arguments are read by their bytes, 16 (a wider array header) the general way, alike") {
    const Bytes fifteen = packed(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const auto c = codec::locate_event_args(fifteen);
    REQUIRE(c);
    CHECK(c->count == 15);
    CHECK(c->args_begin == 4);
    CHECK(c->args_end == fifteen.size() - 3);
    const Bytes sixteen = packed(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    const auto d = codec::locate_event_args(sixteen);
    REQUIRE(d);
    CHECK(d->count == 16);
    CHECK(d->args_begin == 6);  // 0xdc and a 16-bit count
    CHECK(d->args_end == sixteen.size() - 3);
  }
  SECTION("a payload that only ends like the usual envelope is still checked whole") {
    // {"a": [bin of a1 'k' 80]: the map's second entry is missing.
    const Bytes bin_tail{0x82, 0xa1, 'a', 0x91, 0xc4, 0x03, 0xa1, 'k', 0x80};
    CHECK_THROWS_WITH(codec::locate_event_args(bin_tail), Catch::Contains("malformed event payload"));
    // {"a": [1, "k"], then a map where the key "k" belongs.
    const Bytes two_args{0x82, 0xa1, 'a', 0x92, 0x01, 0xa1, 'k', 0x80};
    CHECK_THROWS_WITH(codec::locate_event_args(two_args), Catch::Contains("malformed event payload"));
  }
  SECTION("a valid payload in another layout is left to the JSON path") {
    const Bytes swapped{0x82, 0xa1, 'k', 0x80, 0xa1, 'a', 0x91, 0x01};  // {"k": {}, "a": [1]}
    CHECK_FALSE(codec::locate_event_args(swapped));
    CHECK(codec::decode_event_args(swapped).args == json::array({1}));
    CHECK_FALSE(codec::locate_event_args(json::to_msgpack(json{{"a", json::array()}, {"k", json::object()}, {"z", 1}})));
  }
  SECTION("malformed payloads are errors, as for decode_event_args") {
    Bytes truncated = fast;
    truncated.pop_back();
    CHECK_THROWS_WITH(codec::locate_event_args(truncated), Catch::Contains("malformed event payload"));
    Bytes trailing = fast;
    trailing.push_back(0xc0);
    CHECK_THROWS_WITH(codec::locate_event_args(trailing), Catch::Contains("bytes after the value"));
    Bytes invalid = fast;
    invalid[4] = 0xc1;
    CHECK_THROWS_WITH(codec::locate_event_args(invalid), Catch::Contains("0xc1"));
    CHECK_THROWS_WITH(codec::locate_event_args(Bytes{}), Catch::Contains("malformed event payload"));
  }
  SECTION("the nesting limit counts the envelope's own two levels, and named argument keys are strings") {
    // {"a": [[[...[1]...]]], "k": {}} with the argument nested `depth` arrays deep.
    const auto nested = [](std::size_t depth) {
      Bytes wire{0x82, 0xa1, 'a', 0x91};
      wire.insert(wire.end(), depth, 0x91);
      wire.push_back(0x01);
      wire.insert(wire.end(), {0xa1, 'k', 0x80});
      return wire;
    };
    CHECK(codec::locate_event_args(nested(codec::kMaxNesting - 2)));
    CHECK_THROWS_WITH(codec::locate_event_args(nested(codec::kMaxNesting - 1)),
                      Catch::Contains("nested deeper than"));
    const Bytes int_key{0x82, 0xa1, 'a', 0x90, 0xa1, 'k', 0x81, 0x01, 0x02};  // {"a": [], "k": {1: 2}}
    CHECK_THROWS_WITH(codec::locate_event_args(int_key), Catch::Contains("not a string"));
  }
}

TEST_CASE("packed_args: the fast read gives what the JSON path gives, or declines", "[packed]") {
  std::int64_t i64 = 0;
  CHECK(fast_read(std::numeric_limits<std::int64_t>::min(), i64));
  CHECK(i64 == std::numeric_limits<std::int64_t>::min());
  std::uint64_t u64 = 0;
  CHECK(fast_read(std::numeric_limits<std::uint64_t>::max(), u64));
  CHECK(u64 == std::numeric_limits<std::uint64_t>::max());
  int i = 0;
  CHECK(fast_read(-129, i));
  CHECK(i == -129);
  double d = 0;
  CHECK(fast_read(3, d));  // an integer read as a double, like json::get<double>
  CHECK(d == 3.0);
  CHECK(fast_read(-0.5, d));
  CHECK(d == -0.5);
  float f = 0;
  CHECK(fast_read(2.5, f));
  CHECK(f == 2.5f);
  bool b = false;
  CHECK(fast_read(true, b));
  CHECK(b);
  std::string s;
  CHECK(fast_read(std::string(300, 'q'), s));
  CHECK(s == std::string(300, 'q'));
  Bytes bytes;
  CHECK(fast_read(Bytes(70000, 0x11), bytes));
  CHECK(bytes == Bytes(70000, 0x11));

  // Declined: the JSON path converts (or refuses) these by its own rules.
  std::int8_t small = 0;
  CHECK_FALSE(fast_read(300, small));
  CHECK_FALSE(fast_read(-129, small));
  unsigned u = 0;
  CHECK_FALSE(fast_read(-1, u));
  CHECK_FALSE(fast_read(1.5, i));
  CHECK_FALSE(fast_read(1, b));
  CHECK_FALSE(fast_read(Bytes{1, 2}, s));
  CHECK_FALSE(fast_read(std::string("ab"), bytes));
  CHECK_FALSE(fast_read(std::string("1"), d));
}

TEST_CASE("packed_args: a typed handler has a fast path only for simple parameters", "[packed]") {
  std::vector<std::string> calls;
  auto typed = ditask::detail::make_handlers(
      [&](int n, const std::string& s, Bytes blob) { calls.push_back(std::to_string(n) + s + std::to_string(blob.size())); });
  REQUIRE(typed.packed);
  CHECK(ditask::detail::make_handlers([](const ditask::EventArgs&) {}).packed == nullptr);
  CHECK(ditask::detail::make_handlers([](int, const ditask::Kwargs&) {}).packed == nullptr);
  CHECK(ditask::detail::make_handlers([](json) {}).packed == nullptr);
  CHECK(ditask::detail::make_handlers([] {}).packed != nullptr);

  auto run = [&](const Bytes& wire) {
    auto layout = codec::locate_event_args(wire);
    REQUIRE(layout);
    layout->bytes = wire;
    return typed.packed(layout->view(), ditask::EventMeta{});
  };
  CHECK(run(packed(4, std::string("ab"), Bytes(3, 0))));
  CHECK(calls == std::vector<std::string>{"4ab3"});
  // Declined without calling: wrong arity, a mistyped argument, named arguments.
  CHECK_FALSE(run(packed(4, std::string("ab"))));
  CHECK_FALSE(run(packed(std::string("4"), std::string("ab"), Bytes{})));
  CHECK_FALSE(run(codec::encode_event_args(ditask::EventArgs::from(4, "ab", Bytes{}, ditask::kw("x", 1)))));
  CHECK(calls.size() == 1);
  // The raw form shares the same callable.
  typed.raw(ditask::EventArgs::from(5, "c", Bytes(1, 0)), ditask::EventMeta{});
  CHECK(calls.back() == "5c1");
}

TEST_CASE("packed_args: a packed remote event reaches fast and JSON handlers alike, and a mismatch is reported",
          "[packed]") {
  std::mutex mutex;
  std::vector<std::string> errors;
  auto bus = std::make_shared<ditask::detail::EventBus>([&](const std::string& event, std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      const std::lock_guard lock(mutex);
      errors.push_back(event + ": " + ex.what());
    }
  });
  bus->start();
  bus->end_startup_window();
  std::vector<std::string> seen;
  auto typed = ditask::detail::make_handlers([&](int n) { seen.push_back("typed " + std::to_string(n)); });
  bus->add("e", std::move(typed.raw), false, std::move(typed.packed));
  bus->add("e", ditask::detail::make_raw_handler([&](const ditask::EventArgs& a) { seen.push_back("raw " + a.args.dump()); }), false);
  auto narrow = ditask::detail::make_handlers([&](std::int8_t n) { seen.push_back("narrow " + std::to_string(n)); });
  bus->add("e", std::move(narrow.raw), false, std::move(narrow.packed));

  auto remote = [](const Bytes& wire) {
    ditask::detail::RemoteEvent e;
    e.event = "e";
    e.packed = codec::locate_event_args(wire);
    REQUIRE(e.packed);
    e.packed->bytes = wire;
    return e;
  };
  std::vector<ditask::detail::RemoteEvent> events;
  events.push_back(remote(packed(7)));
  events.push_back(remote(packed(300)));             // int8_t declines: the JSON path converts it
  events.push_back(remote(packed(std::string("x"))));  // nobody can take a string as a number
  bus->post_remote(std::move(events));
  bus->drain();
  bus->stop();
  CHECK(seen == std::vector<std::string>{"typed 7", "raw [7]", "narrow 7", "typed 300", "raw [300]",
                                         "narrow 44", "raw [\"x\"]"});
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0], Catch::StartsWith("e: argument 0"));
  CHECK_THAT(errors[1], Catch::StartsWith("e: argument 0"));
}

TEST_CASE("packed_args: a std::span<const std::uint8_t> parameter views the received bytes without a copy, "
          "on the fast path and the JSON path, and a span argument is sent as bytes",
          "[packed]") {
  using View = std::span<const std::uint8_t>;
  Bytes blob(70000);
  for (std::size_t i = 0; i < blob.size(); ++i) {
    blob[i] = static_cast<std::uint8_t>(i * 3);
  }
  // Sent from a span: the same bytes as from a vector, on the wire and as JSON.
  CHECK(packed(View(blob), 1) == packed(blob, 1));
  check_same_as_json(View(blob), std::string("s"));
  CHECK(ditask::EventArgs::from(View(blob)).args == ditask::EventArgs::from(blob).args);

  std::vector<std::pair<const std::uint8_t*, Bytes>> seen;  // where each view pointed, and what it held
  auto typed = ditask::detail::make_handlers([&](View view, int n) {
    seen.emplace_back(view.data(), Bytes(view.begin(), view.end()));
    CHECK(n == 9);
  });
  REQUIRE(typed.packed);
  // Fast path: the view points into the event's own bytes.
  const Bytes wire = packed(blob, 9);
  auto layout = codec::locate_event_args(wire);
  REQUIRE(layout);
  layout->bytes = wire;
  REQUIRE(typed.packed(layout->view(), ditask::EventMeta{}));
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].second == blob);
  const auto* begin = layout->bytes.data();
  CHECK((seen[0].first > begin && seen[0].first < begin + layout->bytes.size()));
  // A string is not bytes: declined here, and refused by the JSON path naming the argument.
  const Bytes mistyped = packed(std::string("ab"), 9);
  auto other = codec::locate_event_args(mistyped);
  REQUIRE(other);
  other->bytes = mistyped;
  CHECK_FALSE(typed.packed(other->view(), ditask::EventMeta{}));
  CHECK_THROWS_WITH(typed.raw(ditask::EventArgs::from(std::string("ab"), 9), ditask::EventMeta{}),
                    Catch::StartsWith("argument 0"));
  // JSON path (a local emit): the view points into the EventArgs' binary.
  const auto args = ditask::EventArgs::from(blob, 9);
  typed.raw(args, ditask::EventMeta{});
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].second == blob);
  CHECK(seen[1].first == args.args[0].get_binary().data());
  CHECK(args.get<View>(0).size() == blob.size());
}
