// SPDX-License-Identifier: MIT
// The hello payload: round trips, the wire keys, the refusal rules, and hostile input of every
// kind (wrong types, missing keys, oversize fields, truncation, huge declared lengths, nesting).
#include "mesh/hello.hpp"
#include "mesh/refusal.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
using Bytes = std::vector<std::uint8_t>;
using nlohmann::json;

namespace {

mesh::Hello sample() {
  mesh::Hello h;
  h.run_id = "run-2024";
  h.run_id_explicit = true;
  h.node_id = 12;
  h.attempt = 3;
  h.instance = 0xfedcba9876543210ULL;
  h.labels = {"learner", "node.12", "gpu"};
  h.max_frame_bytes = 64ULL << 20;
  h.listen = "tcp://127.0.0.1:40123";
  h.nonce = std::string(64, 'a');
  h.auth = true;
  h.world_size = 6;
  return h;
}

/// The sample hello as a JSON map, for tests that change one key.
json sample_map() { return json::from_msgpack(mesh::encode_hello(sample())); }

Bytes pack(const json& j) { return json::to_msgpack(j); }

/// decode_hello's error text, or "<no error>"; fails the test for any other exception type.
std::string hello_error_of(std::span<const std::uint8_t> payload) {
  try {
    (void)mesh::decode_hello(payload);
  } catch (const ditask::Error& e) {
    return e.what();
  }
  return "<no error>";
}

std::string map_error(const json& j) { return hello_error_of(pack(j)); }

/// A map {"v": 1, "n": 0, "i": 1, "m": 1, "x": <raw>} with `raw` spliced in as the value of "x".
Bytes with_raw_value(const Bytes& raw) {
  Bytes out = pack(json{{"v", 1}, {"n", 0}, {"i", 1}, {"m", 1}});
  out[0] = 0x85;  // fixmap of 5 instead of 4
  out.insert(out.end(), {0xa1, 'x'});
  out.insert(out.end(), raw.begin(), raw.end());
  return out;
}

/// Decodes; only ditask::Error with a one-line "malformed hello: " message is acceptable.
void decode_if_valid(std::span<const std::uint8_t> payload) {
  try {
    (void)mesh::decode_hello(payload);
  } catch (const ditask::Error& e) {
    const std::string what = e.what();
    REQUIRE(what.rfind("malformed hello: ", 0) == 0);
    REQUIRE(what.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("hello: every field round trips", "[mesh][hello]") {
  const auto h = sample();
  CHECK(mesh::decode_hello(mesh::encode_hello(h)) == h);

  mesh::Hello extremes;
  extremes.node_id = std::numeric_limits<std::int64_t>::min();
  extremes.attempt = std::numeric_limits<std::int64_t>::max();
  extremes.instance = std::numeric_limits<std::uint64_t>::max();
  extremes.max_frame_bytes = std::numeric_limits<std::uint64_t>::max();
  CHECK(mesh::decode_hello(mesh::encode_hello(extremes)) == extremes);
  CHECK(mesh::decode_hello(mesh::encode_hello(mesh::Hello{})) == mesh::Hello{});
}

TEST_CASE("hello: the payload is a map with the documented short keys", "[mesh][hello]") {
  const json j = sample_map();
  const json expected = {
      {"v", mesh::kWireVersion},
      {"n", 12},
      {"i", 0xfedcba9876543210ULL},
      {"m", 64ULL << 20},
      {"r", "run-2024"},
      {"rx", true},
      {"a", 3},
      {"l", {"gpu", "learner", "node.12"}},
      {"la", "tcp://127.0.0.1:40123"},
      {"c", std::string(64, 'a')},
      {"au", true},
      {"w", 6},
  };
  CHECK(j == expected);
}

TEST_CASE("hello: only version, node id, instance and max frame bytes are required",
          "[mesh][hello]") {
  const auto h = mesh::decode_hello(pack(json{{"v", mesh::kWireVersion}, {"n", 4}, {"i", 9}, {"m", 1024}}));
  mesh::Hello expected;
  expected.node_id = 4;
  expected.instance = 9;
  expected.max_frame_bytes = 1024;
  CHECK(h == expected);

  const std::pair<const char*, const char*> required[] = {
      {"v", "malformed hello: missing key 'v' (version)"},
      {"n", "malformed hello: missing key 'n' (node id)"},
      {"i", "malformed hello: missing key 'i' (instance)"},
      {"m", "malformed hello: missing key 'm' (max frame bytes)"},
  };
  for (const auto& [key, message] : required) {
    auto j = sample_map();
    j.erase(key);
    CHECK(map_error(j) == message);
  }
}

TEST_CASE("hello: a field of the wrong type is refused", "[mesh][hello]") {
  struct Case {
    const char* key;
    json value;
    const char* message;
  };
  const Case cases[] = {
      {"v", "1", "malformed hello: 'v' (version) must be an unsigned integer, got string"},
      {"n", 1.5, "malformed hello: 'n' (node id) must be an integer, got float"},
      {"n", nullptr, "malformed hello: 'n' (node id) must be an integer, got nil"},
      {"i", true, "malformed hello: 'i' (instance) must be an unsigned integer, got bool"},
      {"m", json::array({1}),
       "malformed hello: 'm' (max frame bytes) must be an unsigned integer, got array"},
      {"r", 5, "malformed hello: 'r' (run id) must be a string, got unsigned integer"},
      {"rx", 1, "malformed hello: 'rx' (run id explicit) must be a bool, got unsigned integer"},
      {"a", "3", "malformed hello: 'a' (attempt) must be an integer, got string"},
      {"l", "gpu", "malformed hello: 'l' (labels) must be an array, got string"},
      {"l", json::array({"a", 1}),
       "malformed hello: 'l' (labels) must be strings, got unsigned integer"},
      {"l", json::array({json::array({"a"})}),
       "malformed hello: 'l' (labels) must be strings, got array"},
      {"l", json::object(), "malformed hello: 'l' (labels) must be an array, got map"},
      {"la", json::binary({1, 2}),
       "malformed hello: 'la' (listen address) must be a string, got binary"},
      {"c", json::object({{"x", 1}}), "malformed hello: 'c' (nonce) must be a string, got map"},
      {"au", "yes", "malformed hello: 'au' (auth) must be a bool, got string"},
  };
  for (const auto& c : cases) {
    auto j = sample_map();
    j[c.key] = c.value;
    INFO("key " << c.key);
    CHECK(map_error(j) == c.message);
  }
}

TEST_CASE("hello: integers out of range are refused", "[mesh][hello]") {
  auto j = sample_map();
  j["v"] = 1ULL << 32;
  CHECK(map_error(j) ==
        "malformed hello: 'v' (version) 4294967296 is out of range (at most 4294967295)");
  j = sample_map();
  j["n"] = 1ULL << 63;
  CHECK(map_error(j) ==
        "malformed hello: 'n' (node id) 9223372036854775808 is out of range "
        "(at most 9223372036854775807)");
  j = sample_map();
  j["i"] = -1;
  CHECK(map_error(j) == "malformed hello: 'i' (instance) must not be negative, got -1");
  j = sample_map();
  j["m"] = -7;
  CHECK(map_error(j) == "malformed hello: 'm' (max frame bytes) must not be negative, got -7");

  // Negative node ids and attempts are the caller's business, not malformed.
  j = sample_map();
  j["n"] = -2;
  j["a"] = -1;
  const auto h = mesh::decode_hello(pack(j));
  CHECK(h.node_id == -2);
  CHECK(h.attempt == -1);

  // MessagePack int64 (0xd3) holding a positive value is a valid unsigned field.
  const Bytes signed_seven{0xd3, 0, 0, 0, 0, 0, 0, 0, 7};
  Bytes raw = pack(json{{"v", mesh::kWireVersion}, {"n", 0}, {"i", 1}});
  raw[0] = 0x84;
  raw.insert(raw.end(), {0xa1, 'm'});
  raw.insert(raw.end(), signed_seven.begin(), signed_seven.end());
  CHECK(mesh::decode_hello(raw).max_frame_bytes == 7);
}

TEST_CASE("hello: strings and labels past their limits are refused both ways", "[mesh][hello]") {
  struct Case {
    const char* key;
    json value;
    const char* decode_message;
    void (*set)(mesh::Hello&);
    const char* encode_message;
  };
  const Case cases[] = {
      {"r", std::string(257, 'r'), "malformed hello: 'r' (run id) is 257 bytes long, at most 256",
       [](mesh::Hello& h) { h.run_id = std::string(257, 'r'); },
       "invalid hello: run id is 257 bytes long, at most 256"},
      {"r", "a\nb", "malformed hello: 'r' (run id) holds a control character",
       [](mesh::Hello& h) { h.run_id = "a\nb"; },
       "invalid hello: run id holds a control character"},
      {"la", std::string(1025, 'x'),
       "malformed hello: 'la' (listen address) is 1025 bytes long, at most 1024",
       [](mesh::Hello& h) { h.listen = std::string(1025, 'x'); },
       "invalid hello: listen address is 1025 bytes long, at most 1024"},
      {"c", std::string(129, 'a'), "malformed hello: 'c' (nonce) is 129 bytes long, at most 128",
       [](mesh::Hello& h) { h.nonce = std::string(129, 'a'); },
       "invalid hello: nonce is 129 bytes long, at most 128"},
      {"c", "ABCD", "malformed hello: 'c' (nonce) is not lowercase hex",
       [](mesh::Hello& h) { h.nonce = "ABCD"; }, "invalid hello: nonce is not lowercase hex"},
      {"c", std::string("ab\0cd", 5), "malformed hello: 'c' (nonce) is not lowercase hex",
       [](mesh::Hello& h) { h.nonce = std::string("ab\0cd", 5); },
       "invalid hello: nonce is not lowercase hex"},
      {"l", json::array({std::string(257, 'l')}),
       "malformed hello: 'l' (labels) entry "
       "'llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll...' is 257 bytes long, "
       "at most 256",
       [](mesh::Hello& h) { h.labels = {std::string(257, 'l')}; },
       "invalid hello: label "
       "'llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll...' is 257 bytes long, "
       "at most 256"},
      {"l", json::array({"ok", "tab\there"}),
       "malformed hello: 'l' (labels) entry 'tab\\x09here' holds a control character",
       [](mesh::Hello& h) { h.labels = {"tab\there"}; },
       "invalid hello: label 'tab\\x09here' holds a control character"},
  };
  for (const auto& c : cases) {
    INFO("key " << c.key);
    auto j = sample_map();
    j[c.key] = c.value;
    CHECK(map_error(j) == c.decode_message);
    auto h = sample();
    c.set(h);
    CHECK_THROWS_WITH(mesh::encode_hello(h), c.encode_message);
  }

  auto j = sample_map();
  json labels = json::array();
  for (int i = 0; i < 257; ++i) {
    labels.push_back("l" + std::to_string(i));
  }
  j["l"] = labels;
  CHECK(map_error(j) == "malformed hello: 'l' (labels) has 257 entries, at most 256");
  auto many = sample();
  many.labels = labels.get<std::set<std::string>>();
  CHECK_THROWS_WITH(mesh::encode_hello(many), "invalid hello: 257 labels, at most 256");
}

TEST_CASE("hello: fields exactly at their limits pass", "[mesh][hello]") {
  auto h = sample();
  h.run_id = std::string(mesh::kMaxRunIdBytes, 'r');
  h.listen = std::string(mesh::kMaxListenBytes, 'x');
  h.nonce = std::string(mesh::kMaxNonceBytes, 'f');
  h.labels.clear();
  for (std::size_t i = 0; i < mesh::kMaxHelloLabels; ++i) {
    auto label = std::to_string(i);
    label.resize(mesh::kMaxLabelBytes, 'z');
    h.labels.insert(label);
  }
  const auto bytes = mesh::encode_hello(h);
  CHECK(bytes.size() < mesh::kMaxHelloBytes);
  CHECK(mesh::decode_hello(bytes) == h);
  // UTF-8 is not a control character.
  h.run_id = "\xc3\xa9t\xc3\xa9";
  CHECK(mesh::decode_hello(mesh::encode_hello(h)) == h);
}

TEST_CASE("hello: a payload that is not a map is refused", "[mesh][hello]") {
  CHECK(hello_error_of(Bytes{}) == "malformed hello: not valid MessagePack (at byte 1)");
  CHECK(hello_error_of(Bytes{0xc0}) == "malformed hello: expected a map, got nil");
  CHECK(hello_error_of(Bytes{0x07}) == "malformed hello: expected a map, got unsigned integer");
  CHECK(hello_error_of(Bytes{0xa1, 'x'}) == "malformed hello: expected a map, got string");
  CHECK(hello_error_of(Bytes{0x91, 0x80}) == "malformed hello: expected a map, got array");
  CHECK(hello_error_of(Bytes{0xc1}) == "malformed hello: not valid MessagePack (at byte 1)");
  // A map key must be a string.
  CHECK(hello_error_of(Bytes{0x81, 0x01, 0x02}) == "malformed hello: not valid MessagePack (at byte 2)");
}

TEST_CASE("hello: every truncation and any trailing byte is refused", "[mesh][hello]") {
  const auto bytes = mesh::encode_hello(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK(hello_error_of(std::span(bytes).first(n)).rfind("malformed hello: not valid MessagePack", 0) ==
          0);
  }
  auto longer = bytes;
  longer.push_back(0xc0);
  CHECK(hello_error_of(longer) ==
        "malformed hello: not valid MessagePack (at byte " + std::to_string(longer.size()) + ")");
}

TEST_CASE("hello: duplicate keys are refused", "[mesh][hello]") {
  Bytes raw = pack(json{{"i", 1}, {"m", 1}, {"n", 0}, {"v", 1}});
  raw[0] = 0x85;
  raw.insert(raw.end(), {0xa1, 'n', 0x05});
  CHECK(hello_error_of(raw) == "malformed hello: duplicate key 'n'");
  raw = with_raw_value({0xc0});
  raw.insert(raw.end(), {0xa2, 'x', 0x0a, 0xc0, 0xa2, 'x', 0x0a, 0xc0});
  raw[0] = 0x87;
  CHECK(hello_error_of(raw) == "malformed hello: duplicate key 'x\\x0a'");
}

TEST_CASE("hello: unknown keys are ignored whatever they hold", "[mesh][hello]") {
  auto j = sample_map();
  j["future"] = {{"nested", {1, 2, {{"deeper", json::binary({1})}}}}};
  j["z"] = json::array({json::array({1}), json::object()});
  CHECK(mesh::decode_hello(pack(j)) == sample());
}

TEST_CASE("hello: a hello of another version decodes only its version", "[mesh][hello]") {
  const auto theirs = mesh::decode_hello(pack(json{{"v", 3}, {"node", "x"}}));
  CHECK(theirs.version == 3);
  CHECK(mesh::hello_refusal(sample(), theirs)->ours == "it speaks protocol version 3, we speak 2");
}

TEST_CASE("hello: huge declared lengths are refused without allocating them", "[mesh][hello]") {
  // str32 / bin32 / array32 / map32 claiming 4 GiB - 1 entries with almost nothing behind them.
  const Bytes claims[] = {
      {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
      {0xc6, 0xff, 0xff, 0xff, 0xff, 1},
      {0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0},
      {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k', 0xc0},
  };
  for (const auto& claim : claims) {
    CHECK(hello_error_of(with_raw_value(claim)).rfind("malformed hello: not valid MessagePack", 0) == 0);
  }
  const Bytes top_map32{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'v', 0x01};
  CHECK(hello_error_of(top_map32).rfind("malformed hello: not valid MessagePack", 0) == 0);

  Bytes big(mesh::kMaxHelloBytes + 1, 0xc0);
  CHECK(hello_error_of(big) ==
        "malformed hello: payload of 131073 bytes exceeds the limit of "
        "131072 bytes");
}

TEST_CASE("hello: deep nesting is refused before it can exhaust the stack", "[mesh][hello]") {
  const auto nested = [](std::size_t depth, std::uint8_t open) {
    Bytes raw;
    for (std::size_t i = 0; i < depth; ++i) {
      raw.push_back(open);
      if (open == 0x81) {
        raw.insert(raw.end(), {0xa1, 'k'});
      }
    }
    raw.push_back(0xc0);
    return raw;
  };
  const std::string too_deep = "malformed hello: nested deeper than 32 levels";
  CHECK(hello_error_of(with_raw_value(nested(100'000, 0x91))) == too_deep);
  CHECK(hello_error_of(with_raw_value(nested(1'000'000, 0x81))).find("exceeds the limit") !=
        std::string::npos);
  CHECK(hello_error_of(with_raw_value(nested(30'000, 0x81))) == too_deep);
  // The top map is level 1, so an unknown key may hold 31 more levels.
  CHECK_NOTHROW(mesh::decode_hello(with_raw_value(nested(31, 0x91))));
  CHECK(hello_error_of(with_raw_value(nested(32, 0x91))) == too_deep);
  CHECK(hello_error_of(with_raw_value(nested(32, 0x81))) == too_deep);
  // A top-level array is refused before its first element.
  CHECK(hello_error_of(nested(1'000, 0x91)) == "malformed hello: expected a map, got array");
}

TEST_CASE("hello: random and mutated bytes only ever raise ditask::Error", "[mesh][hello]") {
  std::mt19937 rng(20240607);  // NOLINT(cert-msc51-cpp): fixed seed, reproducible failures
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 3000; ++round) {
    Bytes junk(static_cast<std::size_t>(byte(rng) % 64));
    for (auto& b : junk) {
      b = static_cast<std::uint8_t>(byte(rng));
    }
    decode_if_valid(junk);
  }
  const auto valid = mesh::encode_hello(sample());
  for (int round = 0; round < 3000; ++round) {
    auto mutated = valid;
    const int edits = 1 + byte(rng) % 4;
    for (int e = 0; e < edits; ++e) {
      const auto at = static_cast<std::size_t>(byte(rng)) % mutated.size();
      switch (byte(rng) % 3) {
        case 0:
          mutated[at] = static_cast<std::uint8_t>(byte(rng));
          break;
        case 1:
          mutated.resize(std::max<std::size_t>(1, at));
          break;
        default:
          mutated.insert(mutated.begin() + static_cast<std::ptrdiff_t>(at),
                         static_cast<std::uint8_t>(byte(rng)));
          break;
      }
    }
    decode_if_valid(mutated);
  }
}

TEST_CASE("hello: refusal rules", "[mesh][hello]") {
  const auto mine = sample();
  auto theirs = sample();
  theirs.instance = 42;
  theirs.node_id = 3;
  CHECK(mesh::hello_refusal(mine, theirs) == std::nullopt);
  const auto ours = [&](const mesh::Hello& m) { return mesh::hello_refusal(m, theirs).value().ours; };

  SECTION("another wire version") {
    theirs.version = 7;
    CHECK(ours(mine) == "it speaks protocol version 7, we speak 2");
    CHECK(mesh::hello_refusal(mine, theirs)->permanent);
  }
  SECTION("our own instance") {
    theirs.instance = mine.instance;
    CHECK(ours(mine) == "a hello from ourselves");
    CHECK_FALSE(mesh::hello_refusal(mine, theirs)->permanent);
  }
  SECTION("run ids differ and both are explicit") {
    theirs.run_id = "other";
    CHECK(ours(mine) == "its run id 'other' differs from ours 'run-2024'");
    CHECK(mesh::hello_refusal(mine, theirs)->permanent);
  }
  SECTION("run ids differ but one is not explicit") {
    theirs.run_id = "other";
    theirs.run_id_explicit = false;
    CHECK(mesh::hello_refusal(mine, theirs) == std::nullopt);
    auto implicit_mine = mine;
    implicit_mine.run_id_explicit = false;
    theirs.run_id_explicit = true;
    CHECK(mesh::hello_refusal(implicit_mine, theirs) == std::nullopt);
  }
  SECTION("the version is named first, then ourselves, then the run id") {
    theirs.run_id = "other";
    theirs.instance = mine.instance;
    CHECK(ours(mine) == "a hello from ourselves");
    theirs.version = 1;
    CHECK(ours(mine) == "it speaks protocol version 1, we speak 2");
  }
  SECTION("a run id with control characters is quoted on one line") {
    theirs.run_id = "a\nb";
    CHECK(ours(mine) == "its run id 'a\\x0ab' differs from ours 'run-2024'");
  }
}

TEST_CASE("hello: each refusal is worded from each side's own point of view", "[mesh][hello]") {
  // `ours` is what the refusing node logs, `theirs` what the refused node reads in the bye.
  struct Case {
    mesh::Refusal r;
    const char* ours;
    const char* theirs;
    bool permanent;
  };
  const Case cases[] = {
      {mesh::refusal::version(2, 1), "it speaks protocol version 2, we speak 1",
       "we speak protocol version 2, it speaks 1", true},
      {mesh::refusal::run_id("job-b", "job-a"), "its run id 'job-b' differs from ours 'job-a'",
       "our run id 'job-b' differs from its run id 'job-a'", true},
      {mesh::refusal::token_missing(), "it sent no token and we require one (--token or DITASK_TOKEN)",
       "we sent no token and it requires one (--token or DITASK_TOKEN)", true},
      {mesh::refusal::token_unexpected(), "it requires a token and we have none (--token or DITASK_TOKEN)",
       "we require a token and it has none (--token or DITASK_TOKEN)", true},
      {mesh::refusal::wrong_token(), "its token proof does not match our token (--token or DITASK_TOKEN)",
       "our token proof does not match its token (--token or DITASK_TOKEN)", true},
      {mesh::refusal::own_node_id(4), "duplicate node id 4: it has our own node id",
       "duplicate node id 4: we have its own node id", false},
      {mesh::refusal::duplicate_node(0, 1, "tcp://127.0.0.1:9"),
       "duplicate node id 0: node 0 is already connected (attempt 1, tcp://127.0.0.1:9)",
       "duplicate node id 0: another node 0 is already connected to it (attempt 1, tcp://127.0.0.1:9)", false},
  };
  for (const auto& c : cases) {
    CHECK(c.r.ours == c.ours);
    CHECK(c.r.theirs == c.theirs);
    CHECK(c.r.permanent == c.permanent);
  }
}
